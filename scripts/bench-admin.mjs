#!/usr/bin/env node
// Benchmarks the admin API behind the web application's pages (npm run bench:admin; builds first).
// A relay in this process with 100 machines, 500 stacks (each with a finished deployment), 1,000 API keys
// and a day of usage in SQLite; a signed-in user calls each page's API 50 times in turn over loopback.
// Prints p50 / p95 / max per call as a markdown table. Tests never assert on these numbers.
import { mkdtempSync, rmSync } from "node:fs";
import { availableParallelism, cpus, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const { resolveRelayConfig, startRelay, hashPassword, hashSecret, createApiKey } = await import(join(root, "dist/relay/index.js"));
const { silentLogger } = await import(join(root, "dist/proto/index.js"));

const dir = mkdtempSync(join(tmpdir(), "makina-bench-admin-"));
const relay = await startRelay(resolveRelayConfig({ flags: { dataDir: dir, port: 0, grpcPort: 0, grpcHost: "127.0.0.1" } }), { log: silentLogger() });
const { store } = relay;
const org = await relay.control.createOrg("bench");
await store.users.create({ orgId: org.id, login: "admin", passwordHash: hashPassword("bench-password"), role: "admin" });

const GiB = 2 ** 30;
const hardware = (i) => ({
  platform: "linux",
  os: "Ubuntu 24.04",
  arch: "x64",
  cpuModel: "AMD EPYC",
  cpuPhysicalCores: 32,
  cpuLogicalCores: 64,
  memoryBytes: 256 * GiB,
  gpus: i % 2 ? [{ vendor: "NVIDIA", model: "NVIDIA H100 80GB HBM3", vramBytes: 80 * GiB, driverVersion: "580.159.04" }] : [],
  disks: [{ mount: "/", sizeBytes: 2000 * GiB, freeBytes: 1500 * GiB }],
  accelerators: i % 2 ? ["cuda"] : [],
});
const machines = [];
for (let i = 0; i < 100; i++) {
  const m = await store.machines.create({ orgId: org.id, name: `gpu-${i}`, tokenHash: hashSecret(`token-${i}`) });
  await store.machines.markOnline(m.id, { hardware: hardware(i), agentVersion: "0.1.0" });
  machines.push(m.id);
}
const stacks = [];
for (let i = 0; i < 500; i++) {
  const s = await store.stacks.create({ orgId: org.id, name: `stack-${i}`, machineId: machines[i % 100], runtime: "gguf", modelRef: `hf:org/repo-${i}/model.gguf`, modelId: `model-${i}`, hasEndpoint: true });
  const dep = await store.deployments.start(s.id, ["install_runtime", "pull_model", "configure_endpoint"]);
  for (let seq = 0; seq < 3; seq++) {
    await store.deployments.stepRunning(dep, seq);
    if (seq === 1) await store.deployments.stepDetail(dep, seq, { path: "/m", sha256: "0".repeat(64), sizeBytes: 4 * GiB });
    await store.deployments.stepFinished(dep, seq, null);
  }
  await store.deployments.finish(dep, null);
  stacks.push(s.id);
}
const keys = [];
for (let i = 0; i < 1000; i++) keys.push((await createApiKey(store, { orgId: org.id, name: `key-${i}`, stackIds: i % 3 ? null : [stacks[i % 500]], rpm: i % 2 ? 600 : null })).record.id);
// A day of traffic: 1,000 keys × 24 hours, recorded the way the gateway records it.
const realNow = Date.now;
for (let h = 0; h < 24; h++) {
  Date.now = () => realNow() - h * 3_600_000;
  for (let i = 0; i < 1000; i++) relay.usage.record({ orgId: org.id, keyId: keys[i], model: `model-${i % 500}`, promptTokens: 20, completionTokens: 100, failed: false });
}
Date.now = realNow;
await relay.usage.flush();

const signIn = await fetch(`${relay.url}/auth/v1/sign-in`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ login: "admin", password: "bench-password" }) });
const cookie = signIn.headers.get("set-cookie").split(";")[0];
const { csrf_token } = await signIn.json();
const call = (method, path, body) =>
  fetch(`${relay.url}${path}`, { method, headers: { cookie, "x-csrf-token": csrf_token, ...(body ? { "content-type": "application/json" } : {}) }, body: body && JSON.stringify(body) });

const calls = [
  ["Machines: GET /admin/v1/machines", () => call("GET", "/admin/v1/machines")],
  ["Machine page: GET /admin/v1/machines/:id", () => call("GET", `/admin/v1/machines/${machines[42]}`)],
  ["Stacks: GET /admin/v1/stacks", () => call("GET", "/admin/v1/stacks")],
  ["Stack page: GET /admin/v1/stacks/:id", () => call("GET", `/admin/v1/stacks/${stacks[42]}`)],
  ["API keys: GET /admin/v1/keys", () => call("GET", "/admin/v1/keys")],
  ["Usage: GET /admin/v1/usage (24 h, per key)", () => call("GET", "/admin/v1/usage?range=24h&by=key")],
  ["Usage: GET /admin/v1/usage (30 d, per model)", () => call("GET", "/admin/v1/usage?range=30d&by=model")],
  ["Forge: GET /admin/v1/catalog", () => call("GET", "/admin/v1/catalog")],
  ["Forge panel: POST /admin/v1/compatibility", () => call("POST", "/admin/v1/compatibility", { machine: machines[1], runtime: "vllm", model: "Qwen/Qwen2.5-7B-Instruct" })],
  ["People: GET /admin/v1/users", () => call("GET", "/admin/v1/users")],
  ["Any page: GET /auth/v1/session", () => call("GET", "/auth/v1/session")],
];
const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];
const rows = [];
for (const [name, send] of calls) {
  for (let i = 0; i < 5; i++) await (await send()).arrayBuffer();
  const times = [];
  let bytes = 0;
  for (let i = 0; i < 50; i++) {
    const t = performance.now();
    const res = await send();
    if (!res.ok) throw new Error(`${name}: ${res.status} ${await res.text()}`);
    bytes = (await res.arrayBuffer()).byteLength;
    times.push(performance.now() - t);
  }
  rows.push([name, pct(times, 50), pct(times, 95), Math.max(...times), bytes]);
}
console.log(`Machine: ${cpus()[0]?.model ?? "?"}, ${availableParallelism()} CPUs; Node ${process.version}; 100 machines, 500 stacks, 1,000 keys, 24,000 usage rows\n`);
console.log("| call | p50 | p95 | max | response |\n|---|---|---|---|---|");
for (const [name, p50, p95, max, bytes] of rows) console.log(`| ${name} | ${p50.toFixed(1)} ms | ${p95.toFixed(1)} ms | ${max.toFixed(1)} ms | ${(bytes / 1024).toFixed(0)} KiB |`);
await relay.stop();
rmSync(dir, { recursive: true, force: true });
