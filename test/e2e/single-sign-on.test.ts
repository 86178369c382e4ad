import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SignJWT, decodeJwt, generateKeyPair, type CryptoKey } from "jose";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { silentLogger } from "../../proto/index.js";
import { resolveRelayConfig } from "../../relay/index.js";
import { hashPassword } from "../../relay/keys/index.js";
import { startRelay, type RelayInternals as Relay } from "../../relay/start/start-relay.js";
import { chromiumPath } from "../helpers/chromium.js";
import { REPO_ROOT } from "../helpers/models.js";
import { OP } from "../helpers/operator.js";
import { adminApi } from "../helpers/admin-api.js";
import { startIdentityProvider, type TestIdentityProvider } from "../helpers/oidc-provider.js";

const SHOTS = join(REPO_ROOT, "test-output", "screenshots");

/**
 * Single sign-on against a real OpenID provider (`oidc-provider`, a certified implementation) on loopback, in
 * Chromium: its development sign-in page takes any login. Logins starting `admin` are in the `makina-admins`
 * group. The provider's token answers can be changed on their way (`tamper`): its ID token signed again with the
 * provider's own key, with another audience or an expiry past, as a provider with a bug or an attacker would send.
 */
describe("single sign-on with an OpenID provider", () => {
  let relay: Relay;
  let dataDir: string;
  let browser: Browser;
  let idp: TestIdentityProvider;
  let issuer = "";
  let key: CryptoKey;
  let kid = "";
  let tamper: ((claims: Record<string, unknown>) => Record<string, unknown>) | null = null;
  /** The key the changed ID token is signed with: the provider's, unless a test says another. */
  let signWith: CryptoKey | null = null;
  /** While set, the provider's redirect back to the relay is kept here instead of followed (the browser stops). */
  let hold: ((answer: string) => void) | null = null;
  let orgId = "";

  const admin = adminApi(() => relay);

  /**
   * A browser of its own. The provider's development pages import web fonts from the internet, which this machine
   * cannot reach: those requests are refused at once rather than left to time out while the page waits for them.
   */
  const newContext = async (options: Parameters<Browser["newContext"]>[0] = {}) => {
    const context = await browser.newContext(options);
    await context.route(/^https?:\/\/(?!127\.0\.0\.1)/, (route) => route.abort());
    context.setDefaultTimeout(30_000);
    return context;
  };

  /** Signs in through the provider in a fresh browser: the provider's page takes `login`; resolves on the relay's page. */
  const signInThrough = async (login: string): Promise<Page> => {
    const page = await (await newContext({ viewport: { width: 1100, height: 760 } })).newPage();
    await page.goto(relay.url);
    await page.getByRole("button", { name: "Sign in with Acme ID" }).click();
    await page.waitForURL((u) => u.origin === issuer, { waitUntil: "commit" });
    await page.locator('input[name="login"]').fill(login);
    await page.locator('input[name="password"]').fill("anything");
    await page.getByRole("button", { name: "Sign-in" }).click();
    await page.getByRole("button", { name: "Continue" }).click();
    await page.waitForURL((u) => u.origin === new URL(relay.url).origin && !u.pathname.startsWith("/auth/"));
    return page;
  };

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    const started = await startIdentityProvider();
    idp = started;
    ({ issuer, key, kid } = started);
    dataDir = mkdtempSync(join(tmpdir(), "makina-sso-"));
    relay = await startRelay(resolveRelayConfig({ flags: { dataDir, port: 0, grpcPort: 0, grpcHost: "127.0.0.1", ssoAllowPrivate: true } }), { log: silentLogger() });
    started.register([`${relay.url}/auth/v1/sso/acme/callback`]);
    started.route = (req, res, handle) => {
      if (hold) {
        const keep = hold;
        const end = res.end.bind(res);
        res.end = ((...args: Parameters<typeof res.end>) => {
          const location = String(res.getHeader("location") ?? "");
          if (!location.includes("/auth/v1/sso/")) return end(...args);
          keep(location);
          res.statusCode = 200;
          res.removeHeader("location");
          res.removeHeader("content-length");
          return end("held");
        }) as typeof res.end;
        return void handle(req, res);
      }
      if (!tamper || !req.url?.startsWith("/token")) return void handle(req, res);
      // The token answer, changed on its way: the ID token's claims changed and signed again with the provider's key.
      const chunks: Buffer[] = [];
      const change = tamper;
      res.write = ((c: Buffer | string) => (chunks.push(Buffer.from(c)), true)) as typeof res.write;
      const end = res.end.bind(res);
      res.end = ((c?: Buffer | string) => {
        if (c) chunks.push(Buffer.from(c));
        const answer = JSON.parse(Buffer.concat(chunks).toString()) as { id_token: string };
        void new SignJWT(change(decodeJwt(answer.id_token)))
          .setProtectedHeader({ alg: "RS256", kid })
          .sign(signWith ?? key)
          .then((signed) => {
            const body = JSON.stringify({ ...answer, id_token: signed });
            res.setHeader("content-length", Buffer.byteLength(body));
            end(body);
          });
        return res;
      }) as typeof res.end;
      void handle(req, res);
    };
    const org = await relay.control.orgs.create(OP, { name: "Acme" });
    orgId = org.id;
    await relay.store.users.create({ orgId, login: "root", passwordHash: await hashPassword("break-glass-password"), role: "admin" });
    await relay.store.users.create({ orgId, login: "carol", passwordHash: await hashPassword("carol-password-1"), role: "member" });
    browser = await chromium.launch({ executablePath: chromiumPath(), args: ["--no-sandbox", "--disable-dev-shm-usage"] });
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await relay?.stop();
    await idp?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("is set up by an admin: the issuer read now, the secret never shown again, a wrong issuer refused", async () => {
    const wrong = await admin<{ error: { param: string; message: string } }>("PUT", `/orgs/${orgId}/sso`, { issuer: `${issuer}/nowhere`, client_id: "makina", client_secret: "x", label: "Acme ID" });
    expect([wrong.status, wrong.body.error.param]).toEqual([400, "issuer"]);
    // Set up from the web application: the People page, as the organization's admin.
    const page = await (await newContext({ viewport: { width: 1200, height: 1100 } })).newPage();
    await page.goto(relay.url);
    await page.getByLabel("Login").fill("root");
    await page.getByLabel("Password").fill("break-glass-password");
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "People" }).click();
    const panel = page.getByTestId("sso-settings");
    await panel.getByRole("button", { name: "Set up…" }).click();
    expect(await panel.locator("code").textContent()).toBe(`${relay.url}/auth/v1/sso/acme/callback`);
    await panel.getByLabel("Issuer URL").fill(issuer);
    await panel.getByLabel("Button label").fill("Acme ID");
    await panel.getByLabel("Client ID").fill("makina");
    await panel.getByLabel("Client secret").fill("makina-client-secret");
    await panel.getByLabel("Groups claim").fill("groups");
    await panel.getByLabel("Admin groups").fill("makina-admins");
    await page.screenshot({ path: join(SHOTS, "sso-settings.png") });
    await panel.getByRole("button", { name: "Save single sign-on" }).click();
    await expect.poll(() => panel.textContent()).toContain(`People sign in with Acme ID (${issuer}); passwords work too.`);
    await page.context().close();
    const set = await admin<Record<string, unknown>>("GET", `/orgs/${orgId}/sso`);
    expect(set.status).toBe(200);
    expect(set.body).toMatchObject({ role_claim: "groups", admin_groups: ["makina-admins"] });
    expect(set.body).toMatchObject({ issuer, client_id: "makina", has_secret: true, label: "Acme ID", redirect_uri: `${relay.url}/auth/v1/sso/acme/callback`, passwords: "everyone" });
    expect(JSON.stringify(set.body)).not.toContain("makina-client-secret");
    expect(JSON.stringify((await admin("GET", `/orgs/${orgId}/sso`)).body)).not.toContain("makina-client-secret");
  });

  it("signs a person in through the provider: a member made on first sign-in, an admin from a group, found again by subject", async () => {
    const page = await signInThrough("dana");
    await page.getByRole("navigation", { name: "Main" }).waitFor();
    await page.screenshot({ path: join(SHOTS, "sso-signed-in.png") });
    const users = await relay.store.users.listByOrg(orgId);
    expect(users.find((u) => u.login === "dana@acme.test")).toMatchObject({ role: "member", disabledAt: null });
    const boss = await signInThrough("admin-eve");
    await boss.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Audit log" }).click();
    await boss.getByTestId("audit-table").waitFor();
    expect((await relay.store.users.listByOrg(orgId)).find((u) => u.login === "admin-eve@acme.test")?.role).toBe("admin");
    // Signed in again: the same person, not a new one.
    await signInThrough("dana");
    expect((await relay.store.users.listByOrg(orgId)).filter((u) => u.login.startsWith("dana"))).toHaveLength(1);
    const audit = await relay.store.audit.list(orgId, { limit: 50 });
    expect(audit.map((e) => e.action)).toEqual(expect.arrayContaining(["sso.user_created", "sso.sign_in"]));
  });

  it("refuses a wrong state, a replayed answer, a token for another audience, an expired ID token, and a person disabled here", async () => {
    const refusal = async (page: Page) => (await page.getByTestId("sso-error").textContent()) ?? "";
    // A callback no sign-in started.
    const forged = await (await newContext()).newPage();
    await forged.goto(`${relay.url}/auth/v1/sso/acme/callback?code=anything&state=made-up`);
    expect(await refusal(forged)).toMatch(/unknown or was already used/);
    await forged.screenshot({ path: join(SHOTS, "sso-refused.png") });
    // As a phone shows it: the button and the refusal above the password form.
    await forged.setViewportSize({ width: 390, height: 760 });
    await forged.screenshot({ path: join(SHOTS, "sso-refused-narrow.png") });
    // The provider's answer, captured and sent again: its state was used.
    const context = await newContext();
    const page = await context.newPage();
    let answer = "";
    page.on("request", (r) => {
      if (r.url().includes("/auth/v1/sso/acme/callback")) answer = r.url();
    });
    await page.goto(relay.url);
    await page.getByRole("button", { name: "Sign in with Acme ID" }).click();
    await page.waitForURL((u) => u.origin === issuer, { waitUntil: "commit" });
    await page.locator('input[name="login"]').fill("frank");
    await page.locator('input[name="password"]').fill("anything");
    await page.getByRole("button", { name: "Sign-in" }).click();
    await page.getByRole("button", { name: "Continue" }).click();
    await page.getByRole("navigation", { name: "Main" }).waitFor();
    // Sent again, with the browser's cookies: refused, and nobody signed in by it.
    const cookies = (await context.cookies()).map((c) => `${c.name}=${c.value}`).join("; ");
    const replay = await fetch(answer, { redirect: "manual", headers: { cookie: cookies } });
    expect(replay.status).toBe(303);
    expect(replay.headers.get("location")).toBe("/?sso_error=unknown_state");
    expect(replay.headers.getSetCookie().some((c) => c.startsWith("makina_session=") && !c.startsWith("makina_session=;"))).toBe(false);
    // The provider's answer taken to another organization's address (a provider sending a browser on to another's,
    // the "mix-up" attack): refused there before any code is traded, and no longer good at its own.
    const held = await (await newContext()).newPage();
    let heldAnswer = "";
    await held.goto(relay.url);
    await held.getByRole("button", { name: "Sign in with Acme ID" }).click();
    await held.waitForURL((u) => u.origin === issuer, { waitUntil: "commit" });
    await held.locator('input[name="login"]').fill("henry");
    await held.locator('input[name="password"]').fill("anything");
    await held.getByRole("button", { name: "Sign-in" }).click();
    hold = (answer) => (heldAnswer = answer);
    try {
      await held.getByRole("button", { name: "Continue" }).click();
      await expect.poll(() => heldAnswer, { timeout: 15_000 }).not.toBe("");
    } finally {
      hold = null;
    }
    const heldCookies = (await held.context().cookies(heldAnswer)).map((c) => `${c.name}=${c.value}`).join("; ");
    const elsewhere = await fetch(heldAnswer.replace("/sso/acme/callback", "/sso/rivals/callback"), { redirect: "manual", headers: { cookie: heldCookies } });
    expect(elsewhere.headers.get("location")).toBe("/?sso_error=unknown_state");
    expect((await fetch(heldAnswer, { redirect: "manual", headers: { cookie: heldCookies } })).headers.get("location")).toBe("/?sso_error=unknown_state");
    await held.context().close();
    // A sign-in started from another site (a cross-site form): refused; and never by a GET.
    const crossSite = await fetch(`${relay.url}/auth/v1/sso/acme/start`, { method: "POST", headers: { origin: "https://evil.example", "content-type": "application/json" }, body: "{}" });
    expect([crossSite.status, await crossSite.json()]).toEqual([403, { sso_error: "unavailable" }]);
    // (A form, which any site can post, is not JSON.)
    const form = await fetch(`${relay.url}/auth/v1/sso/acme/start`, { method: "POST", headers: { origin: relay.url, "content-type": "application/x-www-form-urlencoded" }, body: "" });
    expect(form.status).toBe(403);
    expect((await fetch(`${relay.url}/auth/v1/sso/acme/start`, { redirect: "manual" })).status).toBe(404);
    // An ID token for another client, and one already expired, each signed by the provider's own key.
    for (const [change, name] of [
      [(c: Record<string, unknown>) => ({ ...c, aud: "another-client" }), "another audience"],
      [(c: Record<string, unknown>) => ({ ...c, exp: Math.floor(Date.now() / 1000) - 3600, iat: Math.floor(Date.now() / 1000) - 7200 }), "expired"],
    ] as const) {
      tamper = change;
      try {
        const refused = await signInThrough("grace");
        expect(await refusal(refused), name).toMatch(/identity provider's answer was refused/);
      } finally {
        tamper = null;
      }
    }
    // Claims as the provider sent them, but signed by a key that is not the provider's.
    tamper = (c) => c;
    signWith = (await generateKeyPair("RS256")).privateKey;
    try {
      expect(await refusal(await signInThrough("grace"))).toMatch(/identity provider's answer was refused/);
    } finally {
      tamper = null;
      signWith = null;
    }
    expect((await relay.store.users.listByOrg(orgId)).some((u) => u.login === "grace@acme.test")).toBe(false);
    // Disabled here: the provider still vouches for them, the relay does not let them in.
    const dana = (await relay.store.users.listByOrg(orgId)).find((u) => u.login === "dana@acme.test")!;
    expect((await admin("PATCH", `/users/${dana.id}`, { disabled: true })).status).toBe(200);
    expect(await refusal(await signInThrough("dana"))).toMatch(/This account is disabled/);
    const reasons = (await relay.store.audit.list(orgId, { limit: 100 })).filter((e) => e.action === "sso.sign_in" && e.outcome === "failure").map((e) => (e.detail as { reason: string }).reason);
    // (A state no sign-in started names no organization: recorded, but in no organization's log.)
    expect(reasons).toEqual(expect.arrayContaining(["disabled", "provider answer refused: unexpected JWT claim value encountered", "provider answer refused: JWT timestamp claim value failed validation"]));
  });

  it("turns passwords off for everyone but the break-glass admin", async () => {
    const off = await admin("PUT", `/orgs/${orgId}/sso`, { issuer, client_id: "makina", label: "Acme ID", role_claim: "groups", admin_groups: ["makina-admins"], passwords: "break_glass", break_glass_login: "root" });
    expect(off.status).toBe(200);
    const signIn = (login: string, password: string) => fetch(`${relay.url}/auth/v1/sign-in`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ login, password }) });
    const carol = await signIn("carol", "carol-password-1");
    expect(carol.status).toBe(401);
    expect(((await carol.json()) as { error: { message: string } }).error.message).toBe('Your organization signs in with single sign-on: use "Sign in with Acme ID".');
    expect((await signIn("root", "break-glass-password")).status).toBe(200);
    // A new issuer or client id needs its own secret: the kept one goes only where it was given for.
    const moved = await admin<{ error: { param: string } }>("PUT", `/orgs/${orgId}/sso`, { issuer, client_id: "another-client", label: "Acme ID" });
    expect([moved.status, moved.body.error.param]).toEqual([400, "client_secret"]);
    // With two organizations on single sign-on, the sign-in page shows no tenant's button: it asks which organization.
    const buttons = async () => (await (await fetch(`${relay.url}/auth/v1/sso`)).json()) as { data: unknown[]; ask_org: boolean };
    expect(await buttons()).toMatchObject({ data: [{ org: "acme", label: "Acme ID" }], ask_org: false });
    const rivals = await relay.control.orgs.create(OP, { name: "Rivals" });
    await relay.control.sso.set(OP, rivals.id, { issuer, clientId: "makina", clientSecret: "x", label: "Contoso (Okta)", roleClaim: null, adminGroups: [], passwords: "everyone", breakGlassLogin: null });
    expect(await buttons()).toMatchObject({ data: [], ask_org: true });
    await relay.control.sso.remove(OP, rivals.id);
    // The break-glass login must be an enabled admin of the organization.
    const notAdmin = await admin<{ error: { param: string } }>("PUT", `/orgs/${orgId}/sso`, { issuer, client_id: "makina", label: "Acme ID", passwords: "break_glass", break_glass_login: "carol" });
    expect([notAdmin.status, notAdmin.body.error.param]).toEqual([400, "break_glass_login"]);
  });
});
