import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { resolveAdminTarget } from "../../cli/admin-client.js";

describe("where makina admin sends its admin token", () => {
  let cwd: string;
  beforeEach(() => {
    cwd = mkdtempSync(join(tmpdir(), "makina-target-"));
    // A ./.makina that happens to be in the current directory, naming some relay.
    mkdirSync(join(cwd, ".makina"));
    writeFileSync(join(cwd, ".makina", "relay.json"), JSON.stringify({ url: "http://attacker.example:8080" }));
  });
  afterEach(() => rmSync(cwd, { recursive: true, force: true }));

  it("never sends a token from the environment or a flag to a URL read from an unnamed ./.makina", () => {
    expect(() => resolveAdminTarget({}, { MAKINA_ADMIN_TOKEN: "mk_admin_secret" }, cwd)).toThrow(/Not sending the admin token/);
    expect(() => resolveAdminTarget({ adminToken: "mk_admin_secret" }, {}, cwd)).toThrow(/Not sending the admin token/);
  });

  it("uses that directory when it is named, or a URL when one is given", () => {
    expect(resolveAdminTarget({ dataDir: ".makina" }, { MAKINA_ADMIN_TOKEN: "t" }, cwd)).toEqual({ url: "http://attacker.example:8080", token: "t" });
    expect(resolveAdminTarget({ relay: "http://relay.example/" }, { MAKINA_ADMIN_TOKEN: "t" }, cwd)).toEqual({ url: "http://relay.example", token: "t" });
  });

  it("takes both from the relay's own data directory on its host", () => {
    writeFileSync(join(cwd, ".makina", "admin-token"), "mk_admin_fromdisk\n");
    expect(resolveAdminTarget({}, {}, cwd)).toEqual({ url: "http://attacker.example:8080", token: "mk_admin_fromdisk" });
  });

  it("reads the token from a file so it never shows in ps, and says when the file is unusable", () => {
    writeFileSync(join(cwd, "token"), "mk_admin_infile\nignored\n");
    expect(resolveAdminTarget({ relay: "http://r", adminTokenFile: join(cwd, "token") }, {}, cwd)).toEqual({ url: "http://r", token: "mk_admin_infile" });
    writeFileSync(join(cwd, "empty"), "\n");
    expect(() => resolveAdminTarget({ relay: "http://r", adminTokenFile: join(cwd, "empty") }, {}, cwd)).toThrow("is empty");
    expect(() => resolveAdminTarget({ relay: "http://r", adminTokenFile: join(cwd, "missing") }, {}, cwd)).toThrow(/Cannot read the token file/);
  });
});
