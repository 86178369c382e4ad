import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it, vi } from "vitest";
import { resolveAgentConfig, startAgent, type Agent } from "../../agent/index.js";
import { silentLogger } from "../../proto/index.js";
import { fakeAdapter } from "../fakes/fake-runtime.js";
import { runCli, startCli } from "../helpers/cli.js";
import { startTestGateway, type TestGateway } from "../helpers/test-gateway.js";

describe("stopping drains what is in flight", () => {
  let gw: TestGateway | undefined;
  afterEach(async () => {
    await gw?.close();
    gw = undefined;
  });
  const chat = (g: TestGateway, content: string) =>
    fetch(`${g.baseURL}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${g.apiKey}`, "content-type": "application/json", connection: "close" },
      body: JSON.stringify({ model: g.modelId, messages: [{ role: "user", content }] }),
    });

  it("a relay told to stop takes no new connection but lets a request in flight finish", async () => {
    const g = (gw = await startTestGateway({ runtime: "fake", relayFlags: { drainTimeoutMs: 10_000 } }));
    const slow = chat(g, "slow 100 all of this arrives");
    await vi.waitFor(() => expect(g.agent.inference.inFlight).toBe(1), { timeout: 5_000, interval: 5 });
    const stopped = g.relay.stop();
    await expect(chat(g, "too late")).rejects.toThrow();
    const res = await slow;
    expect(res.status).toBe(200);
    expect(((await res.json()) as { choices: { message: { content: string } }[] }).choices[0]!.message.content).toBe("all of this arrives");
    await stopped;
  });

  it("an agent told to stop finishes its requests while the relay turns new ones away with 503", async () => {
    const g = (gw = await startTestGateway({ runtime: "fake", agentFlags: { drainTimeoutMs: 10_000 } }));
    // Slow enough (1.6 s) that the refusals are seen while it still runs, even on a loaded machine.
    const slow = chat(g, "slow 400 every word of it");
    await vi.waitFor(() => expect(g.agent.inference.inFlight).toBe(1), { timeout: 5_000, interval: 5 });
    const stopped = g.agent.stop();
    await vi.waitFor(async () => {
      const refused = await chat(g, "a new one");
      expect(refused.status).toBe(503);
      expect(refused.headers.get("retry-after")).toBeTruthy();
    }, { timeout: 5_000, interval: 20 });
    const res = await slow;
    expect(res.status).toBe(200);
    expect(((await res.json()) as { choices: { message: { content: string } }[] }).choices[0]!.message.content).toBe("every word of it");
    await stopped;
  });

  it("ends what is still running once the drain period is over", async () => {
    const g = (gw = await startTestGateway({ runtime: "fake", relayFlags: { drainTimeoutMs: 200 } }));
    const stuck = chat(g, "hang");
    await vi.waitFor(() => expect(g.agent.inference.inFlight).toBe(1), { timeout: 5_000, interval: 5 });
    await g.relay.stop();
    // Answered, not cut: 503 saying why, with Retry-After (never a hang, never a 200).
    const res = await stuck;
    expect([res.status, res.headers.get("retry-after")]).toEqual([503, "1"]);
    expect(((await res.json()) as { error: { code: string; message: string } }).error).toMatchObject({ code: "runtime_unavailable", message: expect.stringMatching(/^The relay is stopping/) });
    await vi.waitFor(() => expect(g.agent.inference.inFlight).toBe(0), { timeout: 5_000, interval: 10 });
  });
});

describe("SIGTERM to a relay process with 20 streams in flight", () => {
  let dir: string;
  let agent: Agent | undefined;
  afterAll(async () => {
    await agent?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("lets every stream finish to its [DONE], takes no new request, then exits 0", async () => {
    dir = mkdtempSync(join(tmpdir(), "makina-sigterm-"));
    const dataDir = join(dir, "relay");
    const { child: relay } = await startCli(["relay", "--data-dir", dataDir, "--port", "0", "--grpc-port", "0"], /agents dial/, { MAKINA_DRAIN_TIMEOUT_MS: "30000" });
    const exited = new Promise<number | null>((resolve) => relay.once("exit", (code) => resolve(code)));
    const admin = async (...args: string[]) => {
      const r = await runCli(["admin", ...args, "--data-dir", dataDir, "--json"]);
      expect(r.code, r.stderr).toBe(0);
      return JSON.parse(r.stdout) as Record<string, string>;
    };
    const info = JSON.parse(readFileSync(join(dataDir, "relay.json"), "utf8")) as { url: string; link_address: string; link_ca_sha256: string };
    const org = (await admin("org", "create", "Drain Co")).slug!;
    const machine = await admin("machine", "create", "--org", org, "--name", "box");
    // The agent runs here, its stacks served by the stand-in model (test/fakes).
    agent = await startAgent(
      resolveAgentConfig({ flags: { server: info.link_address, machineId: machine.id, token: machine.token, caSha256: info.link_ca_sha256, dataDir: join(dir, "agent"), threads: 1, gpu: false } }),
      { log: silentLogger(), adapters: { openai: fakeAdapter() } },
    );
    await agent.link.whenOnline();
    const stack = await admin("stack", "create", "--org", org, "--name", "s", "--machine", machine.id!, "--runtime", "openai", "--model", "http://fake.invalid/v1#fake", "--model-id", "m");
    await admin("stack", "deploy", stack.id!, "--wait");
    const key = (await admin("key", "create", "--org", org, "--name", "k")).key!;

    const words = Array.from({ length: 10 }, (_, i) => `w${i}`);
    const streams = await Promise.all(
      Array.from({ length: 20 }, () =>
        fetch(`${info.url}/v1/chat/completions`, {
          method: "POST",
          headers: { authorization: `Bearer ${key}`, "content-type": "application/json", connection: "close" },
          body: JSON.stringify({ model: "m", messages: [{ role: "user", content: `slow 100 ${words.join(" ")}` }], stream: true }),
        }),
      ),
    );
    expect(streams.map((r) => r.status)).toEqual(Array(20).fill(200));
    relay.kill("SIGTERM");
    const bodies = Promise.all(streams.map((r) => r.text()));
    // While they finish, the relay takes no new connection.
    await vi.waitFor(() => expect(fetch(`${info.url}/health`, { headers: { connection: "close" } })).rejects.toThrow(), { timeout: 5_000, interval: 20 });
    let finished = 0;
    for (const body of await bodies) {
      const data = body.split("\n\n").filter(Boolean).map((e) => e.replace(/^data: /, ""));
      expect(data.at(-1)).toBe("[DONE]");
      const text = data.slice(0, -1).map((d) => (JSON.parse(d) as { choices: { delta: { content?: string } }[] }).choices[0]?.delta.content ?? "").join("");
      expect(text).toBe(words.join(" "));
      finished++;
    }
    expect(finished).toBe(20);
    expect(await exited).toBe(0);
  });
});
