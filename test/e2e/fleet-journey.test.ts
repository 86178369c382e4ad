import type { ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, request, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { resolveAgentConfig, startAgent, type Agent } from "../../agent/index.js";
import { silentLogger } from "../../proto/index.js";
import { startCli, stopCli } from "../helpers/cli.js";
import { emptyDatabase } from "../helpers/databases.js";
import { startNats, type NatsServer } from "../helpers/nats-server.js";
import { startRedis, type RedisServer } from "../helpers/redis-server.js";
import { fakeAdapter } from "../fakes/fake-runtime.js";

/**
 * The whole scaled topology, as an operator runs it: three `makina relay` processes on one PostgreSQL, one
 * NATS and one Redis, two agents (the stand-in model of test/fakes) given every relay's address, and a
 * round-robin load balancer in front of the relays (a small HTTP proxy standing for the operator's). The
 * official `openai` client sends requests through it while one relay is killed (SIGKILL) and another
 * restarted: every request succeeds or gets a documented error, a revoked key is never served after its
 * revocation answered, and a key's limit holds exactly across the relays.
 */
describe("three relays behind a load balancer, one killed and one restarted", () => {
  let nats: NatsServer;
  let redis: RedisServer;
  let database: string;
  const relays: { dir: string; child: ChildProcess | undefined; url: string; link: string }[] = [];
  const agents: Agent[] = [];
  const dirs: string[] = [];
  let balancer: Server;
  let baseURL: string;
  let token: string;
  let key: string;
  let orgId: string;
  const dir = (prefix: string) => {
    const d = mkdtempSync(join(tmpdir(), prefix));
    dirs.push(d);
    return d;
  };
  // The first relay makes the secrets key into its data directory; the others are given it, as an operator copies it.
  const secretsKey = (slot: { dir: string }) => (slot === relays[0] ? [] : ["--secrets-key-file", join(relays[0]!.dir, "secrets.key")]);
  const startRelayProcess = async (slot: { dir: string; child: ChildProcess | undefined; url: string; link: string }) => {
    slot.child = (
      await startCli(["relay", "--data-dir", slot.dir, "--database", database, "--nats", nats.url, "--redis", redis.url, "--port", "0", "--grpc-port", "0", "--grpc-host", "127.0.0.1", ...secretsKey(slot)], /agents dial/)
    ).child;
    const info = JSON.parse(readFileSync(join(slot.dir, "relay.json"), "utf8")) as { url: string; link_address: string };
    slot.url = info.url;
    slot.link = info.link_address;
  };
  const admin = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${relays[0]!.url}/admin/v1${path}`, { method, headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };

  beforeAll(async () => {
    [nats, redis] = await Promise.all([startNats(), startRedis()]);
    const location = await emptyDatabase("postgres");
    database = location.kind === "postgres" ? location.url : "";
    for (let i = 0; i < 3; i++) {
      const slot = { dir: dir(`makina-fleet-relay-${i}-`), child: undefined, url: "", link: "" };
      relays.push(slot);
      await startRelayProcess(slot);
    }
    token = readFileSync(join(relays[0]!.dir, "admin-token"), "utf8").trim();
    orgId = ((await admin("POST", "/orgs", { name: "Fleet" })).body as { id: string }).id;
    for (let m = 0; m < 2; m++) {
      const machine = (await admin("POST", "/machines", { org: orgId, name: `worker-${m}` })).body as { id: string; token: string; install_command: string };
      // The install command names every relay.
      for (const r of relays) expect(machine.install_command).toContain(`--server ${r.link}`);
      const agent = await startAgent(
        resolveAgentConfig({ flags: { server: relays.map((r) => r.link), machineId: machine.id, token: machine.token, dataDir: dir("makina-fleet-agent-"), threads: 1, gpu: false, reconnectMinMs: 100, reconnectMaxMs: 2000 } }),
        { log: silentLogger(), adapters: { openai: fakeAdapter() } },
      );
      agents.push(agent);
      await agent.link.whenOnline();
      const stack = (await admin("POST", "/stacks", { org: orgId, name: `stories-${m}`, machine: machine.id, runtime: "openai", model: "http://fake.invalid/v1#fake", model_id: "stories" })).body as { id: string };
      expect((await admin("POST", `/stacks/${stack.id}/deploy`)).status).toBe(200);
    }
    key = ((await admin("POST", "/keys", { org: orgId, name: "app" })).body as { key: string }).key;
    // The load balancer: round robin over the relays; a relay that refuses a connection is taken out of the
    // rotation for 2 s (as a load balancer's health check would), and the request goes to the next.
    let next = 0;
    const downUntil = new Map<string, number>();
    const pick = () => {
      for (let i = 0; i < relays.length; i++) {
        const relay = relays[next++ % relays.length]!;
        if ((downUntil.get(relay.url) ?? 0) < Date.now()) return relay;
      }
      return relays[next++ % relays.length]!;
    };
    balancer = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const attempt = (tries: number) => {
          const relay = pick();
          const target = new URL(relay.url);
          // A connection per request (as many load balancers do): none left open to a relay that was killed.
          const up = request({ host: target.hostname, port: target.port, path: req.url, method: req.method, headers: req.headers, agent: false }, (answer) => {
            res.writeHead(answer.statusCode ?? 502, answer.headers);
            answer.pipe(res);
          });
          up.on("error", () => {
            downUntil.set(relay.url, Date.now() + 2000);
            if (tries > 1 && !res.headersSent) attempt(tries - 1);
            else res.destroy();
          });
          up.end(Buffer.concat(chunks));
        };
        attempt(relays.length);
      });
    });
    await new Promise<void>((resolve) => balancer.listen(0, "127.0.0.1", resolve));
    baseURL = `http://127.0.0.1:${(balancer.address() as { port: number }).port}/v1`;
    const client = new OpenAI({ baseURL, apiKey: key, maxRetries: 0 });
    await vi.waitFor(async () => {
      for (let i = 0; i < 6; i++) await client.chat.completions.create({ model: "stories", messages: [{ role: "user", content: "ready" }] });
    }, { timeout: 20_000, interval: 200 });
  });
  afterAll(async () => {
    balancer?.close();
    for (const a of agents) await a.stop();
    for (const r of relays) if (r.child && r.child.exitCode === null) await stopCli(r.child);
    await nats?.close();
    await redis?.close();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it("serves or refuses with a documented error throughout, never serves a revoked key, and keeps a key's limit exact", async () => {
    const client = new OpenAI({ baseURL, apiKey: key, maxRetries: 0 });
    const outcomes: string[] = [];
    let running = true;
    const worker = async () => {
      while (running) {
        try {
          const answer = await client.chat.completions.create({ model: "stories", messages: [{ role: "user", content: "still serving" }] });
          outcomes.push(answer.choices[0]!.message.content === "still serving" ? "ok" : "wrong answer");
        } catch (err) {
          const e = err as { status?: number; code?: string; headers?: Headers | Record<string, string> };
          // A request in flight on the killed relay: its connection closes. A relay that has no route yet: 503 with Retry-After.
          outcomes.push(e.status === undefined ? "closed" : e.status === 503 ? `503 ${e.code}` : `unexpected ${e.status} ${e.code}`);
        }
      }
    };
    const workers = [worker(), worker(), worker()];
    await vi.waitFor(() => expect(outcomes.filter((o) => o === "ok").length).toBeGreaterThan(20), { timeout: 10_000, interval: 50 });

    // One relay killed, another restarted (SIGTERM, then started again on its data directory).
    relays[1]!.child!.kill("SIGKILL");
    expect(await stopCli(relays[2]!.child!)).toBe(0);
    await startRelayProcess(relays[2]!);
    const before = outcomes.length;
    await vi.waitFor(() => expect(outcomes.slice(before).filter((o) => o === "ok").length).toBeGreaterThan(30), { timeout: 15_000, interval: 50 });

    // A key revoked through one relay is refused everywhere from the moment the revocation answered.
    const doomed = (await admin("POST", "/keys", { org: orgId, name: "doomed" })).body as { id: string; key: string };
    expect((await admin("POST", `/keys/${doomed.id}/revoke`)).status).toBe(200);
    const revoked = new OpenAI({ baseURL, apiKey: doomed.key, maxRetries: 0 });
    for (let i = 0; i < 9; i++) await expect(revoked.chat.completions.create({ model: "stories", messages: [{ role: "user", content: "no" }] })).rejects.toMatchObject({ status: 401 });

    // A key with rpm 5: 20 requests at once, spread over the relays, give exactly 5 answers and 15 × 429.
    const limited = (await admin("POST", "/keys", { org: orgId, name: "limited", rpm: 5 })).body as { key: string };
    const five = new OpenAI({ baseURL, apiKey: limited.key, maxRetries: 0 });
    const results = await Promise.allSettled(Array.from({ length: 20 }, () => five.chat.completions.create({ model: "stories", messages: [{ role: "user", content: "limited" }] })));
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(5);
    expect(results.filter((r) => r.status === "rejected").map((r) => `${(r.reason as { status?: number }).status} ${(r.reason as { code?: string }).code}${(r.reason as { status?: number }).status ? "" : ` ${String(r.reason)} ${String((r.reason as { cause?: unknown }).cause)}`}`)).toEqual(Array(15).fill("429 rate_limit_exceeded"));

    running = false;
    await Promise.all(workers);
    const unexpected = outcomes.filter((o) => o !== "ok" && o !== "closed" && !/^503 (machine_offline|runtime_unavailable|storage_unavailable)$/.test(o));
    expect(unexpected).toEqual([]);
    expect(outcomes.filter((o) => o === "ok").length).toBeGreaterThan(outcomes.length * 0.8);
  });
});
