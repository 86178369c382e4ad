import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { silentLogger } from "../../proto/index.js";
import { resolveRelayConfig } from "../../relay/index.js";
import { startRelay } from "../../relay/start/start-relay.js";
import { hashSecret } from "../../relay/keys/index.js";
import { startTestGateway, type TestGateway } from "../helpers/test-gateway.js";
import { OP } from "../helpers/operator.js";

/** The value of one sample line of the Prometheus text format; undefined when there is no such line. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of text.split("\n")) {
    if (!line.startsWith(name)) continue;
    const m = /^([^{ ]+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = (m[2] ?? "").split(",").filter(Boolean);
    if (want.length === have.length && want.every((w) => have.includes(w))) return Number(m[3]);
  }
  return undefined;
}

describe("Prometheus metrics", () => {
  let gw: TestGateway;
  const chat = (body: Record<string, unknown>, key = gw.apiKey) =>
    fetch(`${gw.baseURL}/chat/completions`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify({ messages: [{ role: "user", content: "Once upon a time" }], ...body }) });
  const scrape = async () => {
    const res = await fetch(`${gw.relay.url}/metrics`, { headers: { authorization: `Bearer ${gw.relay.adminToken}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/plain");
    return res.text();
  };
  beforeAll(async () => {
    gw = await startTestGateway();
  });
  afterAll(async () => {
    await gw?.close();
  });

  it("needs the admin token", async () => {
    const res = await fetch(`${gw.relay.url}/metrics`);
    expect(res.status).toBe(401);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("invalid_admin_token");
    expect((await fetch(`${gw.relay.url}/metrics`, { headers: { authorization: `Bearer ${gw.apiKey}` } })).status).toBe(401);
  });

  it("counts what was sent, by model, status and key, with tokens, latency, first tokens and refusals", async () => {
    const keyId = (await gw.relay.store.keys.findByHash(hashSecret(gw.apiKey)))!.id;
    const limited = await gw.relay.control.keys.create(OP, gw.orgId, { name: "one a minute", rpm: 1 });
    expect((await chat({ model: gw.modelId, max_tokens: 2 })).status).toBe(200);
    expect((await chat({ model: gw.modelId, max_tokens: 3 })).status).toBe(200);
    const streamed = await chat({ model: gw.modelId, max_tokens: 4, stream: true });
    expect(streamed.status).toBe(200);
    await streamed.text();
    expect((await chat({ model: "no-such-model" })).status).toBe(404);
    expect((await chat({ model: gw.modelId }, "mk_live_not-a-real-key")).status).toBe(401);
    expect((await chat({ model: gw.modelId, max_tokens: 1 }, limited.key)).status).toBe(200);
    expect((await chat({ model: gw.modelId, max_tokens: 1 }, limited.key)).status).toBe(429);

    const text = await scrape();
    expect(sample(text, "makina_requests_total", { model: gw.modelId, status: "200", key_id: keyId })).toBe(3);
    // A model that does not exist is no series of its own.
    expect(sample(text, "makina_requests_total", { model: "", status: "404", key_id: keyId })).toBe(1);
    expect(text).not.toContain("no-such-model");
    expect(sample(text, "makina_requests_total", { model: "", status: "401", key_id: "" })).toBe(1);
    expect(sample(text, "makina_requests_total", { model: gw.modelId, status: "200", key_id: limited.record.id })).toBe(1);
    expect(sample(text, "makina_requests_total", { model: gw.modelId, status: "429", key_id: limited.record.id })).toBe(1);
    expect(sample(text, "makina_rate_limited_total", { kind: "requests" })).toBe(1);
    expect(sample(text, "makina_tokens_total", { model: gw.modelId, direction: "completion" })).toBe(2 + 3 + 4 + 1);
    expect(sample(text, "makina_tokens_total", { model: gw.modelId, direction: "prompt" })!).toBeGreaterThan(0);
    expect(sample(text, "makina_request_duration_seconds_count", { model: gw.modelId })).toBe(5);
    expect(sample(text, "makina_time_to_first_token_seconds_count", { model: gw.modelId })).toBe(1);
    expect(sample(text, "makina_requests_in_flight")).toBe(0);
    expect(sample(text, "makina_machines_online")).toBe(1);
    expect(sample(text, "makina_relay_process_resident_memory_bytes")!).toBeGreaterThan(0);
  });

  it("keeps one series for every model name the client makes up: 10,000 random names leave the series count flat", async () => {
    // Every sample line's name and labels (but the relay process's own and the runtimes' as their agents report them).
    const series = (text: string) =>
      text
        .split("\n")
        .filter((l) => l.startsWith("makina_") && !l.startsWith("makina_relay_") && !l.startsWith("makina_runtime_"))
        .map((l) => l.slice(0, l.lastIndexOf(" ")));
    // The one bucket of requests refused before their model was found exists after the first.
    expect((await chat({ model: "made-up-first" })).status).toBe(404);
    const keyId = (await gw.relay.store.keys.findByHash(hashSecret(gw.apiKey)))!.id;
    const first = await scrape();
    const before = series(first);
    const counted = sample(first, "makina_requests_total", { model: "", status: "404", key_id: keyId })!;
    const sendBatch = (from: number) =>
      Promise.all(Array.from({ length: 50 }, (_, i) => chat({ model: `made-up-${from + i}-${Math.random().toString(36).slice(2)}` }).then((r) => r.status)));
    for (let i = 0; i < 10_000; i += 50) expect(new Set(await sendBatch(i))).toEqual(new Set([404]));
    const text = await scrape();
    expect(series(text)).toEqual(before);
    expect(text).not.toContain("made-up-");
    expect(sample(text, "makina_requests_total", { model: "", status: "404", key_id: keyId })).toBe(counted + 10_000);
  });

  it("shows what each machine's runtimes served, as their agents report it over the link, until the machine goes", async () => {
    const labels = { machine_id: gw.machineId, stack_id: gw.stackId };
    // What the agent itself counted so far (earlier tests' requests included).
    const counted = () => gw.agent.inference.metrics().find((m) => m.stackId === gw.stackId) ?? { requests: 0, completionTokens: 0 };
    const before = counted().requests;
    const tokensBefore = counted().completionTokens;
    expect((await chat({ model: gw.modelId, max_tokens: 5 })).status).toBe(200);
    expect((await chat({ model: gw.modelId, max_tokens: 6 })).status).toBe(200);
    // The agent reports with its heartbeat (every 500 ms here).
    await vi.waitFor(async () => expect(sample(await scrape(), "makina_runtime_requests_total", labels)).toBe(before + 2), { timeout: 5_000, interval: 100 });
    const text = await scrape();
    expect(sample(text, "makina_runtime_completion_tokens_total", labels)).toBe(tokensBefore + 11);
    expect(sample(text, "makina_runtime_failed_requests_total", labels)).toBe(0);
    expect(sample(text, "makina_runtime_requests_in_flight", labels)).toBe(0);

    await gw.agent.stop();
    await vi.waitFor(async () => expect(sample(await scrape(), "makina_runtime_requests_total", labels)).toBeUndefined(), { timeout: 5_000, interval: 100 });
    await gw.restartAgent();
  });
});

describe("a scrape token", () => {
  const dir = mkdtempSync(join(tmpdir(), "makina-scrape-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("reads /metrics and nothing else", async () => {
    const token = "scrape-0123456789abcdef";
    writeFileSync(join(dir, "metrics-token"), `${token}\n`);
    const relay = await startRelay(resolveRelayConfig({ flags: { dataDir: join(dir, "data"), port: 0, grpcPort: 0, grpcHost: "127.0.0.1", metricsTokenFile: join(dir, "metrics-token") } }), { log: silentLogger() });
    try {
      const as = (path: string, bearer: string) => fetch(`${relay.url}${path}`, { headers: { authorization: `Bearer ${bearer}` } }).then((r) => r.status);
      expect(await as("/metrics", token)).toBe(200);
      expect(await as("/metrics", relay.adminToken!)).toBe(200);
      expect(await as("/metrics", `${token}x`)).toBe(401);
      // The scrape token opens nothing of the admin API.
      expect(await as("/admin/v1/orgs", token)).toBe(401);
      expect(await as("/admin/v1/machines?org=x", token)).toBe(401);
    } finally {
      await relay.stop();
    }
  });

  it("stops the relay's start when it is too short to be a secret", async () => {
    writeFileSync(join(dir, "short-token"), "short\n");
    await expect(startRelay(resolveRelayConfig({ flags: { dataDir: join(dir, "data2"), port: 0, grpcPort: 0, grpcHost: "127.0.0.1", metricsTokenFile: join(dir, "short-token") } }), { log: silentLogger() })).rejects.toThrow(
      /must be 16 characters or more/,
    );
  });
});
