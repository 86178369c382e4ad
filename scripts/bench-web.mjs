#!/usr/bin/env node
// Benchmarks the web application in a real browser (npm run bench:web; builds first). A relay in this process, on
// SQLite, with the large organization of scripts/bench/seed-organization.mjs (100 machines, 1,000 stacks, 10,000
// API keys, 100,000 logged requests); Debian's Chromium (MAKINA_CHROMIUM to choose another) signed in as its admin.
// For every page: the time from asking for it until it is interactive (its data on screen, as a person would use
// it), loaded cold (a new address, the bundle from the browser's cache) and reached through the navigation; then
// the lists' search, sort and next page. Also the size of the bundle, gzip-compressed. Prints markdown tables.
// Tests never assert on these times.
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { availableParallelism, cpus, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import { chromium } from "playwright-core";
import { LARGE_FLEET, seedOrganization } from "./bench/seed-organization.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const RUNS = Number(process.env.MAKINA_BENCH_WEB_RUNS ?? 7);

// The bundle, as the relay serves it: every JavaScript and CSS file under dist/web/assets, gzip-compressed.
const assets = join(root, "dist", "web", "assets");
const sizes = { js: 0, css: 0, jsRaw: 0 };
for (const file of readdirSync(assets)) {
  const bytes = readFileSync(join(assets, file));
  if (file.endsWith(".js")) {
    sizes.js += gzipSync(bytes, { level: 9 }).length;
    sizes.jsRaw += bytes.length;
  } else if (file.endsWith(".css")) sizes.css += gzipSync(bytes, { level: 9 }).length;
}

const { resolveRelayConfig, startRelay } = await import(join(root, "dist/relay/index.js"));
const { silentLogger } = await import(join(root, "dist/proto/index.js"));
const dir = mkdtempSync(join(tmpdir(), "makina-bench-web-"));
const relay = await startRelay(resolveRelayConfig({ flags: { dataDir: dir, port: 0, grpcPort: 0, grpcHost: "127.0.0.1" } }), { log: silentLogger() });
const seeded = await seedOrganization(root, relay, LARGE_FLEET, (what) => console.error(`seeded ${what}`));
const aRequest = (await relay.store.requests.list(seeded.org.id, {}, { offset: 0, limit: 1 })).rows[0].id;

const executablePath = process.env.MAKINA_CHROMIUM ?? ["/usr/bin/chromium", "/usr/bin/chromium-browser"].find((p) => existsSync(p));
if (!executablePath) throw new Error("bench:web needs Chromium: apt-get install -y chromium (or set MAKINA_CHROMIUM).");
const browser = await chromium.launch({ executablePath, args: ["--no-sandbox", "--disable-dev-shm-usage"] });
// The readiness checks run as expressions in the page, which its Content-Security-Policy would refuse.
const page = await (await browser.newContext({ viewport: { width: 1280, height: 860 }, bypassCSP: true })).newPage();
page.setDefaultTimeout(30_000);
await page.goto(relay.url);
await page.getByLabel("Login").fill("admin");
await page.getByLabel("Password").fill("bench-password");
await page.getByRole("button", { name: "Sign in" }).click();
await page.getByRole("heading", { name: "Overview", level: 1 }).waitFor();

/** In the page: the rows of a table named `label`, none of them a placeholder. */
const rowsOf = (label, n) => `(() => { const t = document.querySelector('table[aria-label="${label}"]'); const rows = t ? t.querySelectorAll("tbody tr:not(.skeleton)") : []; return rows.length >= ${n}; })()`;
const text = (selector, words) => `(() => { const e = document.querySelector('${selector}'); return !!e && e.textContent.includes(${JSON.stringify(words)}); })()`;
/** Every page: its address, its entry in the navigation (none: reached by address only), and when it is interactive. */
const PAGES = [
  ["Overview", "/", "Overview", text('[data-testid="stat-machines"]', "of 100")],
  ["Machines", "/machines", "Machines", rowsOf("Machines", 50)],
  ["A machine", `/machines/${seeded.machines[42]}`, null, text("main", "Hardware")],
  ["Forge", "/forge", "Forge", text('[data-testid="compatibility"]', "Runtime:")],
  ["Stacks", "/stacks", "Stacks", rowsOf("Stacks", 50)],
  ["A stack", `/stacks/${seeded.stacks[42]}`, null, text("main", "Install runtime")],
  ["API keys", "/keys", "API keys", rowsOf("API keys", 50)],
  ["Usage", "/usage", "Usage", rowsOf("Usage totals", 50)],
  ["Requests", "/requests", "Requests", rowsOf("Requests", 50)],
  ["A request", `/requests/${aRequest}`, null, text("main", "req-bench-")],
  ["People", "/users", "People", rowsOf("People", 21)],
  ["Audit log", "/audit", "Audit log", rowsOf("Audit log", 1)],
];
const nav = (label) => page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: label, exact: true });
/** Milliseconds from `act` until `ready` holds in the page (checked at every frame). */
const timed = async (act, ready) => {
  const t = performance.now();
  await act();
  await page.waitForFunction(ready, undefined, { polling: "raf", timeout: 30_000 });
  return performance.now() - t;
};
const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];

const rows = [];
for (const [name, path, label, ready] of PAGES) {
  const cold = [];
  const navigated = [];
  for (let i = 0; i < RUNS; i++) {
    // From another page, so nothing of this one is on screen.
    await page.goto(`${relay.url}/account`);
    await page.getByRole("heading", { name: "Change password" }).waitFor();
    cold.push(await timed(() => page.goto(`${relay.url}${path}`, { waitUntil: "commit" }), ready));
    if (label) {
      await page.goto(`${relay.url}/account`);
      await page.getByRole("heading", { name: "Change password" }).waitFor();
      navigated.push(await timed(() => nav(label).click(), ready));
    }
  }
  rows.push([name, cold, navigated]);
  console.error(`measured ${name}`);
}

// The lists at work: a key found among 10,000 (typed, then the 200 ms pause before the search is sent), a sort, the next page.
const actions = [];
const measure = async (name, prepare, act, ready) => {
  const times = [];
  for (let i = 0; i < RUNS; i++) {
    await prepare();
    times.push(await timed(act, ready));
  }
  actions.push([name, times]);
};
const keysPage = async () => {
  await page.goto(`${relay.url}/keys`);
  await page.waitForFunction(rowsOf("API keys", 50));
};
await measure("API keys: search one of 10,000 (includes the 200 ms typing pause)", keysPage, () => page.getByRole("searchbox", { name: "Search keys" }).fill("key-09876"), text('[data-testid="list-range"]', "1–1 of 1"));
await measure("API keys: sort by name", keysPage, () => page.getByRole("button", { name: "Name", exact: true }).click(), 'document.querySelector("th[aria-sort]")?.getAttribute("aria-sort") === "ascending" && !document.querySelector("tbody[aria-busy]")');
await measure("API keys: next page", keysPage, () => page.getByRole("button", { name: "Next" }).click(), text('[data-testid="list-range"]', "51–100 of"));
const requestsPage = async () => {
  await page.goto(`${relay.url}/requests`);
  await page.waitForFunction(rowsOf("Requests", 50));
};
await measure("Requests: refused or failed, of 100,000", requestsPage, () => page.getByLabel("Show requests by status").selectOption({ label: "Refused or failed" }), `${text('[data-testid="list-range"]', "of 5,000")}`);

console.log(`Machine: ${cpus()[0]?.model ?? "?"}, ${availableParallelism()} CPUs; Node ${process.version}; ${(await browser.version())}; ${RUNS} runs each`);
console.log(`Organization: ${LARGE_FLEET.machines} machines, ${LARGE_FLEET.stacks.toLocaleString("en-US")} stacks, ${LARGE_FLEET.keys.toLocaleString("en-US")} keys, ${LARGE_FLEET.requests.toLocaleString("en-US")} logged requests\n`);
console.log(`Bundle: ${(sizes.js / 1024).toFixed(1)} KiB of JavaScript gzip-compressed (${(sizes.jsRaw / 1024).toFixed(0)} KiB as served uncompressed), ${(sizes.css / 1024).toFixed(1)} KiB of CSS compressed\n`);
const ms = (x) => (x === undefined ? "—" : `${x.toFixed(0)} ms`);
console.log("| page | loaded cold: p50 | max | through the navigation: p50 | max |\n|---|---|---|---|---|");
for (const [name, cold, navigated] of rows) console.log(`| ${name} | ${ms(pct(cold, 50))} | ${ms(Math.max(...cold))} | ${ms(navigated.length ? pct(navigated, 50) : undefined)} | ${ms(navigated.length ? Math.max(...navigated) : undefined)} |`);
console.log("\n| action | p50 | max |\n|---|---|---|");
for (const [name, times] of actions) console.log(`| ${name} | ${ms(pct(times, 50))} | ${ms(Math.max(...times))} |`);
await browser.close();
await relay.stop();
rmSync(dir, { recursive: true, force: true });
