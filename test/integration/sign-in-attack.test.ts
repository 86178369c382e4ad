import { afterAll, beforeAll, expect, it } from "vitest";
import { startTestGateway, type TestGateway } from "../helpers/test-gateway.js";

// A login hammered from rotating addresses (behind a proxy the relay trusts, as in production): the gateway
// keeps answering, and the right user still signs in from the address it used before.
let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway({ runtime: "fake", relayFlags: { trustProxy: true } });
  const res = await fetch(`${gw.relay.url}/admin/v1/users`, {
    method: "POST",
    headers: { authorization: `Bearer ${gw.relay.adminToken}`, "content-type": "application/json" },
    body: JSON.stringify({ org: gw.orgId, login: "admin-ada", role: "admin", password: "the right password" }),
  });
  expect(res.status).toBe(201);
});
afterAll(() => gw?.close());

const signIn = (password: string, from: string) =>
  fetch(`${gw.relay.url}/auth/v1/sign-in`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-forwarded-for": from },
    body: JSON.stringify({ login: "admin-ada", password }),
  });

it("keeps the gateway answering and the right user signing in while 300 guesses come from rotating addresses", async () => {
  const home = "198.51.100.23";
  expect((await signIn("the right password", home)).status).toBe(200);

  const chat = () =>
    fetch(`${gw.baseURL}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${gw.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ model: gw.modelId, messages: [{ role: "user", content: "meanwhile" }], max_tokens: 2 }),
    }).then((r) => r.status);
  // 300 guesses, 30 at a time, each from an address of its own: IPv6 in a /64 of its own, or IPv4.
  const guesses: number[] = [];
  const served: number[] = [];
  for (let i = 0; i < 300; i += 30) {
    const batch = Array.from({ length: 30 }, (_, j) => i + j).map((n) => signIn(`guess ${n}`, n % 2 ? `2001:db8:${n.toString(16)}::${n}` : `203.0.${n >> 8}.${n & 255}`).then((r) => r.status));
    const [g, s] = await Promise.all([Promise.all(batch), Promise.all([chat(), chat()])]);
    guesses.push(...g);
    served.push(...s);
    // The right user, from where it signed in before, at any moment of the attack.
    expect((await signIn("the right password", home)).status).toBe(200);
  }
  expect(new Set(served)).toEqual(new Set([200]));
  // Each guess was refused: a wrong password (401) until the login's guesses from new addresses ran out, then 429.
  // (At most 4 guesses of a login from new addresses are checked at once: 20 and those 4 at most.)
  expect(guesses.filter((s) => s === 401).length).toBeLessThanOrEqual(24);
  expect(guesses.every((s) => s === 401 || s === 429)).toBe(true);
  expect(guesses.filter((s) => s === 429).length).toBeGreaterThan(200);
  // A new address is held back; the known one is not.
  expect((await signIn("the right password", "192.0.2.99")).status).toBe(429);
  expect((await signIn("the right password", home)).status).toBe(200);
});

it("signs the right user in from where it did before while sign-ins for many logins from fresh addresses fill the line of password checks", async () => {
  // Where the first test signed in from: known for the login.
  const home = "198.51.100.23";
  const signInAs = (login: string, password: string, from: string) =>
    fetch(`${gw.relay.url}/auth/v1/sign-in`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-forwarded-for": from },
      body: JSON.stringify({ login, password }),
    });
  expect((await signInAs("admin-ada", "the right password", home)).status).toBe(200);
  // 200 sign-ins at once, each a login and an address of its own: past the 2 running and 64 waiting, refused.
  let refused!: () => void;
  const full = new Promise<void>((resolve) => (refused = resolve));
  const flood = Array.from({ length: 200 }, (_, n) =>
    signInAs(`nobody-${n}`, "guess", `2001:db8:f${n.toString(16)}::1`).then((r) => {
      if (r.status === 429) refused();
      return r.status;
    }),
  );
  // Once the line is full (a stranger was refused), the right user, from home.
  await full;
  const ada = await signInAs("admin-ada", "the right password", home);
  const statuses = await Promise.all(flood);
  expect(ada.status).toBe(200);
  expect(statuses.filter((s) => s === 429).length).toBeGreaterThan(50);
  expect(statuses.every((s) => s === 401 || s === 429)).toBe(true);
});

