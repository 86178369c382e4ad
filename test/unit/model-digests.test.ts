import { createHash } from "node:crypto";
import { mkdtempSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ModelStore } from "../../agent/models/model-store.js";
import { silentLogger } from "../../proto/index.js";

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

describe("a local model file's digest", () => {
  const dir = mkdtempSync(join(tmpdir(), "makina-digests-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("is kept with the file and not computed again while its size and modification time stay the same", async () => {
    const store = new ModelStore(join(dir, "agent"), silentLogger());
    const file = join(dir, "model.gguf");
    const when = 1_700_000_000;
    writeFileSync(file, "first contents");
    utimesSync(file, when, when);
    expect((await store.pull(file)).sha256).toBe(sha256("first contents"));
    // The same number of bytes and the same modification time: the recorded digest is used, nothing is read.
    writeFileSync(file, "other contents");
    utimesSync(file, when, when);
    expect((await store.pull(file)).sha256).toBe(sha256("first contents"));
    // A new agent (after a restart) finds it too.
    expect((await new ModelStore(join(dir, "agent"), silentLogger()).pull(file)).sha256).toBe(sha256("first contents"));
    // Once the file's modification time moves, it is read and hashed again.
    utimesSync(file, when, when + 5);
    expect((await store.pull(file)).sha256).toBe(sha256("other contents"));
  });
});
