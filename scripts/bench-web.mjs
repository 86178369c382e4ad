#!/usr/bin/env node
// Benchmarks the web application in a real browser (npm run bench:web; builds first). A relay in this process, on
// SQLite, with the large organization of scripts/bench/seed-organization.mjs (100 machines, 1,000 stacks, 10,000
// API keys, 100,000 logged requests); Debian's Chromium (MAKINA_CHROMIUM to choose another) signed in as its admin.
// For every page: the time from asking for it until it is interactive (its data on screen, as a person would use
// it), loaded cold (a new address, the bundle from the browser's cache) and reached through the navigation; then
// the lists' search, sort and next page. Also the size of the bundle as served (brotli). Prints markdown tables.
// Tests never assert on these times.
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { availableParallelism, cpus, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { LARGE_FLEET, seedOrganization } from "./bench/seed-organization.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const RUNS = Number(process.env.MAKINA_BENCH_WEB_RUNS ?? 7);

// The bundle, as the relay serves it to a browser: every JavaScript and CSS file under dist/web/assets, as the build
// compressed it beside the file (brotli, which browsers take; gzip for the others), and as built.
const assets = join(root, "dist", "web", "assets");
const sizes = { js: 0, jsGzip: 0, css: 0, jsRaw: 0 };
for (const file of readdirSync(assets)) {
  const bytes = readFileSync(join(assets, file));
  if (file.endsWith(".js")) {
    sizes.js += readFileSync(join(assets, `${file}.br`)).length;
    sizes.jsGzip += readFileSync(join(assets, `${file}.gz`)).length;
    sizes.jsRaw += bytes.length;
  } else if (file.endsWith(".css")) sizes.css += readFileSync(join(assets, `${file}.br`)).length;
}

const { resolveRelayConfig } = await import(join(root, "dist/relay/index.js"));
// With its store at hand: the seeding writes what no command makes (a thousand machines and their history).
const { startRelay } = await import(join(root, "dist/relay/start/start-relay.js"));
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
const rowsOf = (label, n) => `(() => { const t = document.querySelector('table[aria-label="${label}"]'); return !!t && t.querySelectorAll("tbody tr:not(.skeleton)").length >= ${n}; })()`;
const text = (selector, words) => `(() => { const e = document.querySelector('${selector}'); return !!e && e.textContent.includes(${JSON.stringify(words)}); })()`;
const firstRow = (label, words) => text(`table[aria-label="${label}"] tbody tr:not(.skeleton)`, words);
/** Every page: its address, its entry in the navigation (none: reached by address only), and when it is interactive. */
const PAGES = [
  ["Overview", "/", text('[data-testid="stat-machines"]', "of 100")],
  ["Machines", "/machines", rowsOf("Machines", 50)],
  ["A machine", `/machines/${seeded.machines[42]}`, text("main", "Hardware")],
  ["Forge", "/forge", text('[data-testid="compatibility"]', "Runtime:")],
  ["Stacks", "/stacks", rowsOf("Stacks", 50)],
  // The seeded stacks are drafts with a finished deployment: since issue 43 their page says they are undeployed.
  ["A stack", `/stacks/${seeded.stacks[42]}`, text("main", "Undeployed:")],
  ["API keys", "/keys", rowsOf("API keys", 50)],
  ["Usage", "/usage", rowsOf("Usage totals", 50)],
  ["Requests", "/requests", rowsOf("Requests", 50)],
  ["A request", `/requests/${aRequest}`, text("main", "req-bench-")],
  ["People", "/users", rowsOf("People", 21)],
  ["Audit log", "/audit", rowsOf("Audit log", 1)],
];
const NAVIGATION = new Set(["/", "/machines", "/forge", "/stacks", "/keys", "/usage", "/requests", "/users", "/audit"]);

/**
 * Milliseconds, timed by the page's own clock: from `act` (JavaScript run in the page: a click, a typed value) until
 * `ready` holds at a frame. The clock is the page's so that what the harness adds (its round trips, Playwright's
 * checks before a click) is not counted.
 */
const inPage = (act, ready) =>
  page.evaluate(`new Promise((resolve, reject) => {
    const start = performance.now();
    ${act};
    const check = () => {
      if (${ready}) return resolve(performance.now() - start);
      if (performance.now() - start > 30000) return reject(new Error("not ready after 30 s"));
      requestAnimationFrame(check);
    };
    requestAnimationFrame(check);
  })`);
/** A page loaded at its address: milliseconds from the navigation's start (the page's time origin) until `ready` holds at a frame. */
const loaded = async (path, ready) => {
  await page.goto(`${relay.url}${path}`, { waitUntil: "commit" });
  await page.waitForFunction(`(() => { const ok = ${ready}; if (ok && !window.readyAt) window.readyAt = performance.now(); return ok; })()`, undefined, { polling: "raf", timeout: 30_000 });
  return page.evaluate("window.readyAt");
};
const restAt = async (path, ready) => {
  await page.goto(`${relay.url}${path}`);
  await page.waitForFunction(ready, undefined, { polling: "raf", timeout: 30_000 });
};
const ACCOUNT = text("main h2", "Change password");
const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];

const rows = [];
for (const [name, path, ready] of PAGES) {
  const cold = [];
  const navigated = [];
  for (let i = 0; i < RUNS; i++) {
    // From another page, so nothing of this one is on screen.
    await restAt("/account", ACCOUNT);
    cold.push(await loaded(path, ready));
    if (NAVIGATION.has(path)) {
      await restAt("/account", ACCOUNT);
      navigated.push(await inPage(`document.querySelector('nav[aria-label="Main"] a[href="${path}"]').click()`, ready));
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
    times.push(await inPage(act, ready));
  }
  actions.push([name, times]);
};
const typed = (label, value) => `(() => { const i = document.querySelector('input[aria-label="${label}"]'); i.value = ${JSON.stringify(value)}; i.dispatchEvent(new Event("input", { bubbles: true })); })()`;
const keysPage = (query = "") => () => restAt(`/keys${query}`, rowsOf("API keys", 50));
await measure("API keys: search one of 10,000 (includes the 200 ms pause after typing)", keysPage(), typed("Search keys", "key-09876"), `${text('[data-testid="list-range"]', "1–1 of 1")} && ${firstRow("API keys", "key-09876")}`);
await measure("API keys: sort by name, the other way", keysPage("?sort=name&order=asc"), `document.querySelector("th[aria-sort] button").click()`, firstRow("API keys", "key-09999"));
const FIRST_KEY = `document.querySelector('table[aria-label="API keys"] tbody tr').textContent`;
await measure(
  "API keys: next page",
  keysPage(),
  `window.firstBefore = ${FIRST_KEY}; [...document.querySelectorAll("button")].find((b) => b.textContent === "Next").click()`,
  `${text('[data-testid="list-range"]', "51–100 of")} && ${FIRST_KEY} !== window.firstBefore`,
);
await measure(
  "Requests: refused or failed, of 100,000",
  () => restAt("/requests", rowsOf("Requests", 50)),
  `(() => { const s = document.querySelector('select[aria-label="Show requests by status"]'); s.value = "error"; s.dispatchEvent(new Event("change", { bubbles: true })); })()`,
  text('[data-testid="list-range"]', "of 5,000"),
);

console.log(`Machine: ${cpus()[0]?.model ?? "?"}, ${availableParallelism()} CPUs; Node ${process.version}; ${(await browser.version())}; ${RUNS} runs each`);
console.log(`Organization: ${LARGE_FLEET.machines} machines, ${LARGE_FLEET.stacks.toLocaleString("en-US")} stacks, ${LARGE_FLEET.keys.toLocaleString("en-US")} keys, ${LARGE_FLEET.requests.toLocaleString("en-US")} logged requests\n`);
console.log(`Bundle: ${(sizes.js / 1024).toFixed(1)} KiB of JavaScript as served with brotli (gzip ${(sizes.jsGzip / 1024).toFixed(1)} KiB, ${(sizes.jsRaw / 1024).toFixed(0)} KiB as built), ${(sizes.css / 1024).toFixed(1)} KiB of CSS with brotli\n`);
const ms = (x) => (x === undefined ? "—" : `${x.toFixed(0)} ms`);
console.log("| page | loaded at its address: p50 | max | through the navigation: p50 | max |\n|---|---|---|---|---|");
for (const [name, cold, navigated] of rows) console.log(`| ${name} | ${ms(pct(cold, 50))} | ${ms(Math.max(...cold))} | ${ms(navigated.length ? pct(navigated, 50) : undefined)} | ${ms(navigated.length ? Math.max(...navigated) : undefined)} |`);
console.log("\n| action | p50 | max |\n|---|---|---|");
for (const [name, times] of actions) console.log(`| ${name} | ${ms(pct(times, 50))} | ${ms(Math.max(...times))} |`);
await browser.close();
await relay.stop();
rmSync(dir, { recursive: true, force: true });
