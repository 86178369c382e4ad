import { afterEach, describe, expect, it } from "vitest";
import { HashSlots, SignInGuard, throttledAddress } from "../../relay/auth/index.js";
import { openStore, type Store } from "../../relay/store/index.js";
import { DIALECTS, emptyDatabase } from "../helpers/databases.js";

describe("the address a sign-in is counted under", () => {
  it("counts an IPv6 address by its /64 and an IPv4-mapped one as IPv4", () => {
    expect(
      ["203.0.113.7", "::ffff:203.0.113.7", "2001:db8:1:2:3:4:5:6", "2001:db8:1:2::9", "2001:0db8:0001:0002:ffff::1", "2001:db8:1:3::1", "::1"].map(throttledAddress),
    ).toEqual(["203.0.113.7", "203.0.113.7", "2001:db8:1:2::/64", "2001:db8:1:2::/64", "2001:db8:1:2::/64", "2001:db8:1:3::/64", "0:0:0:0::/64"]);
  });

});

describe.each(DIALECTS)("which sign-ins may be tried, counted in the database (%s)", (dialect) => {
  const stores: Store[] = [];
  afterEach(async () => {
    for (const store of stores.splice(0)) await store.close();
  });
  /** A store on a fresh database, with an organization people sign in to; `also` opens the same database again (another relay). */
  const database = async () => {
    const location = await emptyDatabase(dialect);
    const open = async () => {
      const store = await openStore(location);
      stores.push(store);
      return store;
    };
    const store = await open();
    const org = (await store.orgs.create("Acme"))!;
    return { store, org, also: open };
  };
  const clock = { now: Date.UTC(2026, 10, 24, 12) };
  /**
   * Tries a password: the wait when refused, else 0 (and the attempt ends as `ok` says; a right one is a user's,
   * made on first use).
   */
  const attempt = async (guard: SignInGuard, store: Store, login: string, address: string, ok: boolean | null) => {
    const started = await guard.begin(login, address);
    if ("waitMs" in started) return started.waitMs;
    let userId: string | undefined;
    if (ok) {
      const org = (await store.orgs.list())[0]!;
      userId = (await store.users.findByLogin(login))?.id ?? (await store.users.create({ orgId: org.id, login, passwordHash: "x", role: "member" }))!.id;
    }
    await guard.finish(started, ok, userId);
    return 0;
  };
  const waitOf = (started: Awaited<ReturnType<SignInGuard["begin"]>>) => ("waitMs" in started ? started.waitMs : 0);
  const guardOn = (store: Store) => new SignInGuard(store.signIns, { now: () => clock.now });

  it("holds back a login guessed from one address after 5 failures, rotating within its /64 included", async () => {
    const { store } = await database();
    const guard = guardOn(store);
    for (let i = 0; i < 5; i++) expect(await attempt(guard, store, "ada", `2001:db8:1:2::${i + 1}`, false)).toBe(0);
    expect(await attempt(guard, store, "ada", "2001:db8:1:2::99", true)).toBeGreaterThanOrEqual(30_000);
    // Another /64, and another login from the same one, are not held back by it.
    expect(await attempt(guard, store, "ada", "2001:db8:1:3::1", true)).toBe(0);
    expect(await attempt(guard, store, "bob", "2001:db8:1:2::1", true)).toBe(0);
    // A password that could not be checked (the database away) counts for nothing.
    for (let i = 0; i < 10; i++) expect(await attempt(guard, store, "cy", "198.51.100.1", null)).toBe(0);
    // The wait doubles with each further failure, from the last one; 15 minutes without one forget the count.
    clock.now += 30_000;
    expect(await attempt(guard, store, "ada", "2001:db8:1:2::7", false)).toBe(0);
    expect(await attempt(guard, store, "ada", "2001:db8:1:2::7", false)).toBe(60_000);
    clock.now += 15 * 60_000 + 1;
    for (let i = 0; i < 4; i++) expect(await attempt(guard, store, "ada", "2001:db8:1:2::7", false)).toBe(0);
  });

  it("keeps the right user signing in from a known address while the login is guessed from 60 others", async () => {
    const { store } = await database();
    const guard = guardOn(store);
    expect(await attempt(guard, store, "admin", "192.0.2.10", true)).toBe(0);
    const refused = [];
    for (let i = 0; i < 60; i++) refused.push((await attempt(guard, store, "admin", `2001:db8:${i}::1`, false)) > 0);
    // 20 guesses from new addresses, then every new address waits; the known one does not.
    expect(refused.filter((r) => !r)).toHaveLength(20);
    expect(await attempt(guard, store, "admin", "2001:db8:9999::1", true)).toBeGreaterThan(0);
    const known = await guard.begin("admin", "192.0.2.10");
    expect(known).toMatchObject({ known: true });
  });

  it("shares counts and known addresses between relays on one database, and keeps them across a restart", async () => {
    const { store, also } = await database();
    const [a, b] = [guardOn(store), guardOn(await also())];
    // A person signs in on relay A; the address is known on relay B.
    expect(await attempt(a, store, "dee", "192.0.2.50", true)).toBe(0);
    expect(await b.begin("dee", "192.0.2.50")).toMatchObject({ known: true });
    // Guesses of one login from one address, spread over both relays: the sixth waits on either.
    for (let i = 0; i < 5; i++) expect(await attempt(i % 2 ? a : b, store, "eli", "198.51.100.7", false)).toBe(0);
    expect(await attempt(a, store, "eli", "198.51.100.7", false)).toBeGreaterThanOrEqual(30_000);
    expect(await attempt(b, store, "eli", "198.51.100.7", false)).toBeGreaterThanOrEqual(30_000);
    // 20 guesses of a login from fresh addresses, half on each relay, hold the login from new addresses on both
    // (and on a relay started after them), not from the address dee signed in from.
    for (let i = 0; i < 20; i++) expect(await attempt(i % 2 ? a : b, store, "dee", `203.0.113.${i}`, false)).toBe(0);
    const restarted = guardOn(await also());
    for (const guard of [a, b, restarted]) expect(waitOf(await guard.begin("dee", "203.0.113.200"))).toBeGreaterThan(0);
    expect(waitOf(await restarted.begin("dee", "192.0.2.50"))).toBe(0);
  });

  it("past 300 failures a minute in all, spaces a login's tries from new addresses 5 s apart, known addresses as before", async () => {
    const { store } = await database();
    const guard = guardOn(store);
    expect(await attempt(guard, store, "eve", "192.0.2.20", true)).toBe(0);
    for (let i = 0; i < 300; i++) expect(await attempt(guard, store, `login-${i}`, `10.0.${i >> 8}.${i & 255}`, false)).toBe(0);
    // The right user on an address the relay does not know (a new network) gets in, not locked out.
    expect(await attempt(guard, store, "fresh", "192.0.2.30", true)).toBe(0);
    // A guesser of one login from new addresses waits 5 s between tries.
    expect(await attempt(guard, store, "target", "192.0.2.40", false)).toBe(0);
    expect(await attempt(guard, store, "target", "192.0.2.41", false)).toBe(5_000);
    clock.now += 5_000;
    expect(await attempt(guard, store, "target", "192.0.2.42", false)).toBe(0);
    expect(await attempt(guard, store, "eve", "192.0.2.20", true)).toBe(0);
    clock.now += 60_000;
    expect(await attempt(guard, store, "target", "192.0.2.43", false)).toBe(0);
    expect(await attempt(guard, store, "target", "192.0.2.44", false)).toBe(0);
  });

  it("checks one attempt per login and address at a time, 8 per address and 4 per login from new addresses", async () => {
    const { store } = await database();
    const guard = guardOn(store);
    const ada = await guard.begin("ada", "192.0.2.1");
    expect(waitOf(ada)).toBe(0);
    expect(waitOf(await guard.begin("ada", "192.0.2.1"))).toBeGreaterThan(0);
    for (let i = 0; i < 7; i++) expect(waitOf(await guard.begin(`user-${i}`, "192.0.2.1"))).toBe(0);
    expect(waitOf(await guard.begin("one-more", "192.0.2.1"))).toBeGreaterThan(0);
    if ("waitMs" in ada) throw new Error("refused");
    await guard.finish(ada, false);
    await guard.finish(ada, false);
    expect(waitOf(await guard.begin("ada", "192.0.2.1"))).toBe(0);
    const bo = await Promise.all(Array.from({ length: 4 }, (_, i) => guard.begin("bo", `198.51.100.${i}`)));
    expect(bo.map(waitOf)).toEqual([0, 0, 0, 0]);
    expect(waitOf(await guard.begin("bo", "198.51.100.9"))).toBeGreaterThan(0);
    if ("waitMs" in bo[0]!) throw new Error("refused");
    await guard.finish(bo[0]!, true);
    expect(waitOf(await guard.begin("bo", "198.51.100.9"))).toBe(0);
  });

  it("keeps no login in the database readable, and 16 addresses per user", async () => {
    const { store } = await database();
    const guard = guardOn(store);
    expect(await attempt(guard, store, "correct horse battery", "192.0.2.9", false)).toBe(0);
    const keys = await store.db.selectFrom("sign_in_failures").select("key").execute();
    expect(keys.length).toBeGreaterThan(0);
    expect(JSON.stringify(keys)).not.toMatch(/horse|192\.0\.2\.9/);
    for (let i = 0; i < 20; i++) {
      clock.now += 1;
      expect(await attempt(guard, store, "fay", `198.51.100.${i}`, true)).toBe(0);
    }
    const kept = await store.db.selectFrom("sign_in_addresses").select("address").execute();
    expect(kept.map((r) => r.address).sort()).toEqual(Array.from({ length: 16 }, (_, i) => `198.51.100.${i + 4}`).sort());
  });
});

describe("password hashes at once", () => {
  it("runs at most 2 at a time, lets 64 wait, and refuses more at once with 429 sign_in_throttled", async () => {
    const slots = new HashSlots();
    let running = 0;
    let most = 0;
    const releases: (() => void)[] = [];
    const hash = () =>
      new Promise<boolean>((resolve) => {
        running++;
        most = Math.max(most, running);
        releases.push(() => {
          running--;
          resolve(true);
        });
      });
    const runs = Array.from({ length: 66 }, () => slots.run(hash));
    await expect(slots.run(hash)).rejects.toMatchObject({ code: "sign_in_throttled" });
    while (releases.length || running) {
      await new Promise((r) => setImmediate(r));
      releases.shift()?.();
    }
    expect(await Promise.all(runs)).toHaveLength(66);
    expect(most).toBe(2);
  });

  it("keeps a line of 16 for sign-ins from known addresses, served first: a full line of strangers cannot keep them out", async () => {
    const slots = new HashSlots();
    const order: string[] = [];
    const releases: (() => void)[] = [];
    const hash = (name: string) => () =>
      new Promise<string>((resolve) => {
        order.push(name);
        releases.push(() => resolve(name));
      });
    const strangers = Array.from({ length: 66 }, (_, i) => slots.run(hash(`stranger-${i}`)));
    await expect(slots.run(hash("one more stranger"))).rejects.toMatchObject({ code: "sign_in_throttled" });
    const known = Array.from({ length: 16 }, (_, i) => slots.run(hash(`known-${i}`), true));
    await expect(slots.run(hash("a 17th known"), true)).rejects.toMatchObject({ code: "sign_in_throttled" });
    while (releases.length) {
      releases.shift()!();
      await new Promise((r) => setImmediate(r));
    }
    expect(await Promise.all([...strangers, ...known])).toHaveLength(82);
    // The two running first, then every known one before the strangers waiting.
    expect(order.slice(0, 2)).toEqual(["stranger-0", "stranger-1"]);
    expect(order.slice(2, 18)).toEqual(Array.from({ length: 16 }, (_, i) => `known-${i}`));
    expect(order.slice(18, 20)).toEqual(["stranger-2", "stranger-3"]);
  });
});
