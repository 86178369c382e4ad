#!/usr/bin/env node
// Benchmarks the admin API behind the web application's pages (npm run bench:admin; builds first).
// A relay in this process, on SQLite, with the large organization of scripts/bench/seed-organization.mjs (100
// machines, 1,000 stacks each with a finished deployment, 10,000 API keys, a day of usage, 100,000 logged
// requests); a signed-in user calls each page's API 50 times in turn over loopback, as the pages call them.
// Prints p50 / p95 / max per call as a markdown table. Tests never assert on these numbers.
import { mkdtempSync, rmSync } from "node:fs";
import { availableParallelism, cpus, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { LARGE_FLEET, seedOrganization } from "./bench/seed-organization.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const { resolveRelayConfig } = await import(join(root, "dist/relay/index.js"));
// With its store at hand: the seeding writes what no command makes (a thousand machines and their history).
const { startRelay } = await import(join(root, "dist/relay/start/start-relay.js"));
const { silentLogger } = await import(join(root, "dist/proto/index.js"));

const dir = mkdtempSync(join(tmpdir(), "makina-bench-admin-"));
const relay = await startRelay(resolveRelayConfig({ flags: { dataDir: dir, port: 0, grpcPort: 0, grpcHost: "127.0.0.1" } }), { log: silentLogger() });
const { machines, stacks, keys } = await seedOrganization(root, relay, LARGE_FLEET, (what) => console.error(`seeded ${what}`));

const signIn = await fetch(`${relay.url}/auth/v1/sign-in`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ login: "admin", password: "bench-password" }) });
const cookie = signIn.headers.get("set-cookie").split(";")[0];
const { csrf_token } = await signIn.json();
const call = (method, path, body) =>
  fetch(`${relay.url}${path}`, { method, headers: { cookie, "x-csrf-token": csrf_token, ...(body ? { "content-type": "application/json" } : {}) }, body: body && JSON.stringify(body) });

const calls = [
  ["Overview: GET /admin/v1/overview", () => call("GET", "/admin/v1/overview")],
  ["Machines: GET /admin/v1/machines (a page of 50)", () => call("GET", "/admin/v1/machines?per_page=50")],
  ["Machine page: GET /admin/v1/machines/:id", () => call("GET", `/admin/v1/machines/${machines[42]}`)],
  ["Stacks: GET /admin/v1/stacks (a page of 50)", () => call("GET", "/admin/v1/stacks?per_page=50")],
  ["Every stack whole: GET /admin/v1/stacks (1,000)", () => call("GET", "/admin/v1/stacks?per_page=1000")],
  ["Names for forms: GET /admin/v1/choices", () => call("GET", "/admin/v1/choices")],
  ["Stack page: GET /admin/v1/stacks/:id", () => call("GET", `/admin/v1/stacks/${stacks[42]}`)],
  ["API keys: GET /admin/v1/keys (a page of 50)", () => call("GET", "/admin/v1/keys?per_page=50")],
  ["API keys: searched", () => call("GET", "/admin/v1/keys?per_page=50&q=key-09999")],
  ["API keys: sorted by last 24 h", () => call("GET", "/admin/v1/keys?per_page=50&sort=requests_24h&order=desc")],
  ["Requests: GET /admin/v1/requests (a page of 50)", () => call("GET", "/admin/v1/requests?per_page=50")],
  ["Requests: errors of one key", () => call("GET", `/admin/v1/requests?per_page=50&status=error&key=${keys[20]}`)],
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
console.log(
  `Machine: ${cpus()[0]?.model ?? "?"}, ${availableParallelism()} CPUs; Node ${process.version}; ${LARGE_FLEET.machines} machines, ${LARGE_FLEET.stacks.toLocaleString("en-US")} stacks, ${LARGE_FLEET.keys.toLocaleString("en-US")} keys, 24,000 usage rows, ${LARGE_FLEET.requests.toLocaleString("en-US")} logged requests\n`,
);
console.log("| call | p50 | p95 | max | response |\n|---|---|---|---|---|");
for (const [name, p50, p95, max, bytes] of rows) console.log(`| ${name} | ${p50.toFixed(1)} ms | ${p95.toFixed(1)} ms | ${max.toFixed(1)} ms | ${(bytes / 1024).toFixed(0)} KiB |`);
await relay.stop();
rmSync(dir, { recursive: true, force: true });
