import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { silentLogger } from "../../proto/index.js";
import { resolveRelayConfig } from "../../relay/index.js";
import { startRelay, type RelayInternals } from "../../relay/start/start-relay.js";
import { testModelPath } from "../helpers/models.js";
import { OP } from "../helpers/operator.js";

/** `makina up`'s start as the control plane's one command, on a relay of its own (no agent: the deployment waits for the machine). */
describe("the bootstrap command (makina up's start)", () => {
  let relay: RelayInternals;
  let dataDir: string;
  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), "makina-bootstrap-"));
    relay = await startRelay(resolveRelayConfig({ flags: { dataDir, port: 0, grpcPort: 0, grpcHost: "127.0.0.1" } }), { log: silentLogger() });
  });
  afterAll(async () => {
    await relay?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("makes the organization, the admin, this machine, a deploying stack and a key, each recorded as done by makina up, and reuses them all on the next start", async () => {
    const input = { machineName: "this-box", modelRef: testModelPath(), modelId: "stories" };
    const first = await relay.control.bootstrap({ ...input, kept: {} });
    expect(first).toMatchObject({ org: { slug: "default" }, admin: { login: "admin", password: expect.stringMatching(/^[A-Za-z0-9]{20}$/) }, machine: { token: expect.stringMatching(/^mk_mach_/) }, stack: { state: "deploying", modelId: "stories" }, modelIgnored: false });
    const audit = await relay.control.activity.audit(OP, "default", { limit: 20 });
    expect(audit.map((e) => [e.action, e.actor.kind]).reverse()).toEqual([
      ["org.created", "bootstrap"],
      ["user.created", "bootstrap"],
      ["machine.created", "bootstrap"],
      ["stack.created", "bootstrap"],
      ["stack.deployed", "bootstrap"],
      ["key.created", "bootstrap"],
    ]);

    // The next start, with what the first one wrote down: the same of everything, and nothing new made.
    const again = await relay.control.bootstrap({ ...input, modelRef: "/elsewhere/other.gguf", kept: { adminPassword: first.admin.password, machineId: first.machine.id, stackId: first.stack.id, apiKey: first.apiKey } });
    expect(again).toMatchObject({ org: { id: first.org.id }, admin: { password: first.admin.password }, machine: { id: first.machine.id, token: null }, stack: { id: first.stack.id }, apiKey: first.apiKey, modelIgnored: true });
    expect(await relay.control.activity.audit(OP, "default", { limit: 20 })).toHaveLength(audit.length);

    // An admin who changed the password has it to itself: it is not handed back; a key revoked since is replaced.
    await relay.control.keys.revoke(OP, (await relay.control.keys.list(OP, "default"))[0]!.id);
    const admin = (await relay.control.users.list(OP, "default"))[0]!;
    await relay.control.users.resetPassword(OP, admin.id, { password: "the admin's own now" });
    const third = await relay.control.bootstrap({ ...input, kept: { adminPassword: first.admin.password, machineId: first.machine.id, stackId: first.stack.id, apiKey: first.apiKey } });
    expect(third.admin.password).toBe("");
    expect(third.apiKey).not.toBe(first.apiKey);
  });
});
