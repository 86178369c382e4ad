import { mkdtempSync, rmSync } from "node:fs";
import { createServer, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { silentLogger } from "../../proto/index.js";
import { resolveRelayConfig } from "../../relay/index.js";
import { startRelay, type RelayInternals as Relay } from "../../relay/start/start-relay.js";
import { chromiumPath } from "../helpers/chromium.js";
import { emptyDatabase } from "../helpers/databases.js";
import { startIdentityProvider, type TestIdentityProvider } from "../helpers/oidc-provider.js";
import { OP } from "../helpers/operator.js";

/**
 * Single sign-on on two relays sharing one PostgreSQL database, behind one reverse proxy (as docs/reverse-proxy.md
 * sets one up: the client's Host kept, `X-Forwarded-For` and `X-Forwarded-Proto` added, relays started with
 * `--trust-proxy` and `MAKINA_PUBLIC_URL`, no affinity). The proxy sends every sign-in's start to relay A and every
 * provider's answer to relay B, and the rest to each in turn: a sign-in begun on one relay finishes on the other,
 * and the session it makes works on both. The provider is `oidc-provider` on loopback, in Chromium.
 */
describe("single sign-on across relays behind a reverse proxy", () => {
  let a: Relay;
  let b: Relay;
  let proxy: Server;
  let publicUrl = "";
  let idp: TestIdentityProvider;
  let browser: Browser;
  const dirs: string[] = [];
  /** Which relay answered each path the browser asked through the proxy. */
  const served: { path: string; relay: "a" | "b"; status?: number }[] = [];

  beforeAll(async () => {
    idp = await startIdentityProvider();
    // The proxy listens first: its address is the relays' public URL.
    proxy = createServer();
    await new Promise<void>((r) => proxy.listen(0, "127.0.0.1", r));
    publicUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    const location = await emptyDatabase("postgres");
    const database = location.kind === "postgres" ? location.url : "";
    const start = async (secretsKeyFile?: string) => {
      const dataDir = mkdtempSync(join(tmpdir(), "makina-sso-relay-"));
      dirs.push(dataDir);
      return startRelay(resolveRelayConfig({ flags: { dataDir, database, port: 0, grpcPort: 0, grpcHost: "127.0.0.1", ssoAllowPrivate: true, trustProxy: true, publicUrl, secretsKeyFile } }), { log: silentLogger() });
    };
    a = await start();
    // Relay B is given the secrets key relay A made, as an operator copies it: the client secret is sealed with it.
    b = await start(join(dirs[0]!, "secrets.key"));
    let turn = 0;
    proxy.on("request", (req, res) => {
      const path = req.url ?? "/";
      const to = /^\/auth\/v1\/sso\/[^/]+\/start/.test(path) ? "a" : /^\/auth\/v1\/sso\/[^/]+\/callback/.test(path) ? "b" : turn++ % 2 ? "b" : "a";
      const entry: (typeof served)[number] = { path, relay: to };
      served.push(entry);
      const target = new URL((to === "a" ? a : b).url);
      const forwarded = { ...req.headers, "x-forwarded-for": req.socket.remoteAddress ?? "", "x-forwarded-proto": "http" };
      const upstream = request({ host: target.hostname, port: target.port, method: req.method, path, headers: forwarded }, (answer) => {
        entry.status = answer.statusCode;
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      upstream.on("error", () => res.writeHead(502).end());
      req.pipe(upstream);
    });
    idp.register([`${publicUrl}/auth/v1/sso/acme/callback`]);
    const org = await a.control.orgs.create(OP, { name: "Acme" });
    const res = await fetch(`${a.adminUrl}/admin/v1/orgs/${org.id}/sso`, {
      method: "PUT",
      headers: { authorization: `Bearer ${a.adminToken!}`, "content-type": "application/json" },
      body: JSON.stringify({ issuer: idp.issuer, client_id: "makina", client_secret: "makina-client-secret", label: "Acme ID" }),
    });
    expect(res.status, await res.clone().text()).toBe(200);
    // Relay B hears of it through the database, and gives the same redirect URI: the public one.
    const setOnB = (await (await fetch(`${b.adminUrl}/admin/v1/orgs/${org.id}/sso`, { headers: { authorization: `Bearer ${a.adminToken!}` } })).json()) as { redirect_uri: string };
    expect(setOnB.redirect_uri).toBe(`${publicUrl}/auth/v1/sso/acme/callback`);
    browser = await chromium.launch({ executablePath: chromiumPath(), args: ["--no-sandbox", "--disable-dev-shm-usage"] });
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await Promise.all([a?.stop(), b?.stop()]);
    await new Promise((r) => proxy?.close(r));
    await idp?.close();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  it("starts a sign-in on one relay, finishes it on the other, and the session works on both", async () => {
    const context = await browser.newContext();
    // The provider's development pages import web fonts from the internet, which this machine cannot reach.
    await context.route(/^https?:\/\/(?!127\.0\.0\.1)/, (route) => route.abort());
    context.setDefaultTimeout(30_000);
    const page = await context.newPage();
    await page.goto(publicUrl);
    await page.getByRole("button", { name: "Sign in with Acme ID" }).click();
    await page.waitForURL((u) => u.origin === idp.issuer, { waitUntil: "commit" });
    await page.locator('input[name="login"]').fill("dana");
    await page.locator('input[name="password"]').fill("anything");
    await page.getByRole("button", { name: "Sign-in" }).click();
    await page.getByRole("button", { name: "Continue" }).click();
    await page.waitForURL((u) => u.origin === publicUrl && !u.pathname.startsWith("/auth/"));
    await page.getByRole("navigation", { name: "Main" }).waitFor();
    // Begun on A, finished on B.
    expect(served.filter((s) => s.path.includes("/sso/acme/start")).map((s) => s.relay)).toEqual(["a"]);
    expect(served.filter((s) => s.path.includes("/sso/acme/callback")).map((s) => s.relay)).toEqual(["b"]);
    // The session is every relay's: the pages' requests, shared by both, are answered signed in.
    const before = served.length;
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "API keys" }).click();
    await page.getByRole("button", { name: "Create key" }).first().waitFor();
    await page.reload();
    await page.getByRole("navigation", { name: "Main" }).waitFor();
    // (A request the page's reload left unanswered has no status: only answers count.)
    const answered = () => served.slice(before).filter((s) => (s.path.startsWith("/admin/v1/") || s.path.startsWith("/auth/v1/session")) && s.status !== undefined);
    // Each relay took the session the other made: both answered the pages' requests, every answer signed in.
    await expect.poll(() => new Set(answered().map((s) => s.relay))).toEqual(new Set(["a", "b"]));
    expect(answered().filter((s) => s.status! >= 300)).toEqual([]);
    // The person was made once, by the relay that finished the sign-in.
    const users = await a.store.users.listByOrg((await a.control.orgs.list(OP))[0]!.id);
    expect(users.filter((u) => u.login === "dana@acme.test")).toHaveLength(1);
    await context.close();
  });
});
