import { describe, expect, it } from "vitest";
import { HashSlots, SignInGuard, throttledAddress } from "../../relay/auth/index.js";

describe("which sign-ins may be tried", () => {
  it("counts an IPv6 address by its /64 and an IPv4-mapped one as IPv4", () => {
    expect(
      ["203.0.113.7", "::ffff:203.0.113.7", "2001:db8:1:2:3:4:5:6", "2001:db8:1:2::9", "2001:0db8:0001:0002:ffff::1", "2001:db8:1:3::1", "::1"].map(throttledAddress),
    ).toEqual(["203.0.113.7", "203.0.113.7", "2001:db8:1:2::/64", "2001:db8:1:2::/64", "2001:db8:1:2::/64", "2001:db8:1:3::/64", "0:0:0:0::/64"]);
  });

  const clock = { now: Date.UTC(2026, 10, 24, 12) };
  /** Tries a password: the wait when refused, else 0 (and the attempt ends as `ok` says). */
  const attempt = (guard: SignInGuard, login: string, address: string, ok: boolean | null) => {
    const started = guard.begin(login, address);
    if ("waitMs" in started) return started.waitMs;
    guard.finish(started, ok);
    return 0;
  };
  const waitOf = (started: ReturnType<SignInGuard["begin"]>) => ("waitMs" in started ? started.waitMs : 0);

  it("holds back a login guessed from one address after 5 failures, rotating within its /64 included", () => {
    const guard = new SignInGuard({ now: () => clock.now });
    for (let i = 0; i < 5; i++) expect(attempt(guard, "ada", `2001:db8:1:2::${i + 1}`, false)).toBe(0);
    expect(attempt(guard, "ada", "2001:db8:1:2::99", true)).toBeGreaterThanOrEqual(30_000);
    // Another /64, and another login from the same one, are not held back by it.
    expect(attempt(guard, "ada", "2001:db8:1:3::1", true)).toBe(0);
    expect(attempt(guard, "bob", "2001:db8:1:2::1", true)).toBe(0);
    // A password that could not be checked (the database away) counts for nothing.
    for (let i = 0; i < 10; i++) expect(attempt(guard, "cy", "198.51.100.1", null)).toBe(0);
  });

  it("keeps the right user signing in from a known address while the login is guessed from 300 others", () => {
    const guard = new SignInGuard({ now: () => clock.now });
    expect(attempt(guard, "admin", "192.0.2.10", true)).toBe(0);
    const refused = [];
    for (let i = 0; i < 300; i++) refused.push(attempt(guard, "Admin", `2001:db8:${i}::1`, false) > 0);
    // 20 guesses from new addresses, then every new address waits; the known one does not.
    expect(refused.filter((r) => !r)).toHaveLength(20);
    expect(attempt(guard, "admin", "2001:db8:9999::1", true)).toBeGreaterThan(0);
    expect(attempt(guard, "admin", "192.0.2.10", true)).toBe(0);
  });

  it("past 300 failures a minute in all, spaces a login's tries from new addresses 5 s apart, known addresses as before", () => {
    const guard = new SignInGuard({ now: () => clock.now });
    expect(attempt(guard, "eve", "192.0.2.20", true)).toBe(0);
    for (let i = 0; i < 300; i++) expect(attempt(guard, `login-${i}`, `10.0.${i >> 8}.${i & 255}`, false)).toBe(0);
    // The right user on an address the relay does not know (a restart, another relay) gets in, not locked out.
    expect(attempt(guard, "fresh", "192.0.2.30", true)).toBe(0);
    // A guesser of one login from new addresses waits 5 s between tries.
    expect(attempt(guard, "target", "192.0.2.40", false)).toBe(0);
    expect(attempt(guard, "target", "192.0.2.41", false)).toBe(5_000);
    clock.now += 5_000;
    expect(attempt(guard, "target", "192.0.2.42", false)).toBe(0);
    expect(attempt(guard, "eve", "192.0.2.20", true)).toBe(0);
    clock.now += 60_000;
    expect(attempt(guard, "target", "192.0.2.43", false)).toBe(0);
    expect(attempt(guard, "target", "192.0.2.44", false)).toBe(0);
  });

  it("checks one attempt per login and address at a time, 8 per address and 4 per login from new addresses", () => {
    const guard = new SignInGuard({ now: () => clock.now });
    const ada = guard.begin("ada", "192.0.2.1");
    expect(waitOf(ada)).toBe(0);
    expect(waitOf(guard.begin("ada", "192.0.2.1"))).toBeGreaterThan(0);
    for (let i = 0; i < 7; i++) expect(waitOf(guard.begin(`user-${i}`, "192.0.2.1"))).toBe(0);
    expect(waitOf(guard.begin("one-more", "192.0.2.1"))).toBeGreaterThan(0);
    if ("waitMs" in ada) throw new Error("refused");
    guard.finish(ada, false);
    guard.finish(ada, false);
    expect(waitOf(guard.begin("ada", "192.0.2.1"))).toBe(0);
    const bo = Array.from({ length: 4 }, (_, i) => guard.begin("bo", `198.51.100.${i}`));
    expect(bo.map(waitOf)).toEqual([0, 0, 0, 0]);
    expect(waitOf(guard.begin("bo", "198.51.100.9"))).toBeGreaterThan(0);
    if ("waitMs" in bo[0]!) throw new Error("refused");
    guard.finish(bo[0]!, true);
    expect(waitOf(guard.begin("bo", "198.51.100.9"))).toBe(0);
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
