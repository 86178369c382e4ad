import type { ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { resolveAgentConfig, startAgent, type Agent } from "../../agent/index.js";
import { silentLogger } from "../../proto/index.js";
import { resolveRelayConfig } from "../../relay/index.js";
import { startRelay, type RelayInternals as Relay } from "../../relay/start/start-relay.js";
import { startCli } from "../helpers/cli.js";
import { emptyDatabase } from "../helpers/databases.js";
import { startNats, type NatsServer } from "../helpers/nats-server.js";
import { fakeAdapter } from "../fakes/fake-runtime.js";

/**
 * A relay killed with SIGKILL: relay A is `makina relay` (built, its own process) and relay B runs in this
 * process, both on one PostgreSQL database and one nats-server; the agent (the stand-in model of test/fakes)
 * is given both addresses and holds its link to A. A is killed in the middle of a stream.
 */
describe("a relay killed with streams in flight", () => {
  let nats: NatsServer;
  let a: ChildProcess | undefined;
  let aUrl: string;
  let aToken: string;
  let b: Relay;
  let agent: Agent;
  let key: string;
  let machineId: string;
  const dirs: string[] = [];
  const dir = (prefix: string) => {
    const d = mkdtempSync(join(tmpdir(), prefix));
    dirs.push(d);
    return d;
  };
  const adminA = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${aUrl}/admin/v1${path}`, { method, headers: { authorization: `Bearer ${aToken}`, "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
    return (await res.json()) as Record<string, unknown>;
  };
  const chat = (url: string, content: string, stream = false) =>
    fetch(`${url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "stories", messages: [{ role: "user", content }], stream }),
    });

  beforeAll(async () => {
    nats = await startNats();
    const location = await emptyDatabase("postgres");
    const database = location.kind === "postgres" ? location.url : "";
    const aDir = dir("makina-relay-a-");
    a = (await startCli(["relay", "--data-dir", aDir, "--database", database, "--nats", nats.url, "--port", "0", "--grpc-port", "0", "--grpc-host", "127.0.0.1"], /agents dial/)).child;
    const info = JSON.parse(readFileSync(join(aDir, "relay.json"), "utf8")) as { url: string; link_address: string };
    aUrl = info.url;
    aToken = readFileSync(join(aDir, "admin-token"), "utf8").trim();
    b = await startRelay(resolveRelayConfig({ flags: { dataDir: dir("makina-relay-b-"), database, nats: nats.url, secretsKeyFile: join(aDir, "secrets.key"), port: 0, grpcPort: 0, grpcHost: "127.0.0.1" } }), { log: silentLogger() });

    const org = (await adminA("POST", "/orgs", { name: "Killed" })) as { id: string };
    const machine = (await adminA("POST", "/machines", { org: org.id, name: "survivor" })) as { id: string; token: string };
    machineId = machine.id;
    agent = await startAgent(
      resolveAgentConfig({ flags: { server: [info.link_address, b.linkAddress], machineId, token: machine.token, dataDir: dir("makina-agent-"), threads: 1, gpu: false, reconnectMinMs: 100, reconnectMaxMs: 2000 } }),
      { log: silentLogger(), adapters: { openai: fakeAdapter() } },
    );
    await agent.link.whenOnline();
    // The agent picked one of the two at random: the test wants its link on A, the relay to be killed.
    if (b.registry.get(machineId)) {
      b.registry.get(machineId)!.end();
      await vi.waitFor(async () => expect(((await adminA("GET", `/machines/${machineId}`)) as { state: string }).state).toBe("online"), { timeout: 10_000, interval: 100 });
      await vi.waitFor(() => expect(b.registry.get(machineId)).toBeUndefined(), { timeout: 10_000, interval: 50 });
    }
    const stack = (await adminA("POST", "/stacks", { org: org.id, name: "stories", machine: machineId, runtime: "openai", model: "http://fake.invalid/v1#fake", model_id: "stories" })) as { id: string };
    await adminA("POST", `/stacks/${stack.id}/deploy`);
    key = ((await adminA("POST", "/keys", { org: org.id, name: "app" })) as { key: string }).key;
    await vi.waitFor(async () => expect((await chat(aUrl, "ready")).status).toBe(200), { timeout: 20_000, interval: 200 });
  });
  afterAll(async () => {
    a?.kill("SIGKILL");
    await agent?.stop();
    await b?.stop();
    await nats?.close();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it("ends its clients' streams, the other relay serves on, and the machine is linked and served there within 5 s", async () => {
    const streaming = await chat(aUrl, "slow 200 a b c d e f g h i j k l m n o p q r s t", true);
    expect(streaming.status).toBe(200);
    const reader = streaming.body!.getReader();
    await reader.read();
    // And one sent to B, crossing to A (over B's direct connection to A).
    const crossing = await chat(b.url, "slow 200 a b c d e f g h i j k l m n o p q r s t", true);
    expect(crossing.status).toBe(200);
    const crossingReader = crossing.body!.getReader();
    await crossingReader.read();
    const exited = new Promise((resolve) => a!.once("exit", resolve));
    a!.kill("SIGKILL");
    await exited;
    // The client's stream ends (the connection closed), never with [DONE].
    let text = "";
    const ended = await (async () => {
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) return "closed";
          text += new TextDecoder().decode(value);
        }
      } catch {
        return "closed";
      }
    })();
    expect(ended).toBe("closed");
    expect(text).not.toContain("[DONE]");
    // The stream crossing relays ends with the error event of an incomplete stream, from B.
    let crossed = "";
    for (;;) {
      const { done, value } = await crossingReader.read();
      if (done) break;
      crossed += new TextDecoder().decode(value);
    }
    expect(crossed).toContain('"code":"stream_incomplete"');
    expect(crossed).not.toContain("[DONE]");
    // Relay B answers throughout, and within 5 s serves the machine's stack over the agent's new link.
    expect((await fetch(`${b.url}/health`)).status).toBe(200);
    await vi.waitFor(
      async () => {
        expect(b.registry.get(machineId)).toBeDefined();
        expect((await chat(b.url, "hello again")).status).toBe(200);
      },
      { timeout: 5000, interval: 50 },
    );
  });
});
