import { createHash } from "node:crypto";
import { isIP } from "node:net";
import type { SignInStore } from "../store/index.js";
import { FORGET_FAILURES_AFTER_MS, SignInThrottle } from "./sign-in-throttle.js";

/** Options of {@link SignInGuard}. */
export interface SignInGuardOptions {
  /** Failed sign-ins of one login from one address allowed before that pair waits. @default 5 */
  pairFailures?: number;
  /** Failed sign-ins from one address (any login) before it waits. @default 30 */
  addressFailures?: number;
  /** Failed sign-ins of one login from addresses it never signed in from, before those wait. @default 20 */
  loginFailures?: number;
  /** Failed sign-ins a minute, every login and address together, past which new addresses are spaced. @default 300 */
  failuresPerMinute?: number;
  now?: () => number;
}

/**
 * The address a sign-in is counted under: an IPv4 address as it is (an IPv4-mapped IPv6 one as IPv4), an IPv6
 * address by its /64, the block one subscriber gets (rotating addresses within it is free).
 */
export function throttledAddress(address: string): string {
  const ip = address.replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/i, "");
  if (isIP(ip) !== 6) return ip;
  const [head, tail = ""] = ip.toLowerCase().split("::") as [string, string?];
  const left = head === "" ? [] : head.split(":");
  const right = tail === "" ? [] : tail.split(":");
  const groups = ip.includes("::") ? [...left, ...new Array<string>(8 - left.length - right.length).fill("0"), ...right] : left;
  return `${groups.slice(0, 4).map((g) => g.replace(/^0+(?=.)/, "")).join(":")}::/64`;
}

/** An attempt {@link SignInGuard.begin} let through, and what it counted. */
export interface SignInTicket {
  login: string;
  address: string;
  /** Whether the address was known for the login when the attempt began. */
  known: boolean;
  finished: boolean;
}

/** Past the failure budget, the least time between tries of one login from addresses it never signed in from. */
const SPACED_MS = 5_000;
/** Logins whose last try from a new address this relay remembers (for the spacing above). */
const SPACED_LOGINS = 10_000;
/** How often a relay that counts failures deletes the counts nobody added to for 15 minutes. */
const SWEEP_EVERY_MS = 60_000;

function decrement(counts: Map<string, number>, key: string): void {
  const n = (counts.get(key) ?? 1) - 1;
  if (n > 0) counts.set(key, n);
  else counts.delete(key);
}

/** The key a count is kept under in the database: its kind and a hash (a login typed in the wrong field is not kept readable). */
const countKey = (kind: string, value: string) => `${kind}:${createHash("sha256").update(value).digest("base64url").slice(0, 27)}`;

/**
 * Decides whether a sign-in may be tried, so that guessing passwords is slow and yet an attacker cannot lock
 * the right user out:
 * - one login from one address (IPv6 by its /64) waits after 5 failures, doubling from 30 s to 15 minutes;
 * - one address waits after 30 failures, whatever the logins;
 * - one login waits after 20 failures from addresses it never signed in from (guessing from many addresses),
 *   while the addresses it did sign in from keep trying under their own count;
 * - past 300 failures a minute in all, a login is tried from addresses it never signed in from once every 5 s
 *   at most (on each relay), until the next minute;
 * - one attempt per login and address is checked at a time, 8 per address, and 4 per login from addresses it
 *   never signed in from (on each relay).
 * The counts and the addresses each user signed in from are kept in the database ({@link SignInStore}): every
 * relay on it counts the same failures and knows the same addresses, and a restart forgets neither. Idle counts
 * are forgotten after 15 minutes; 16 addresses are kept per user.
 */
export class SignInGuard {
  private readonly pairs: SignInThrottle;
  private readonly addresses: SignInThrottle;
  private readonly logins: SignInThrottle;
  /** Attempts under way on this relay, by login and address, and their count by address. */
  private readonly underWay = new Set<string>();
  private readonly underWayByAddress = new Map<string, number>();
  /** Attempts under way by login, from addresses it never signed in from. */
  private readonly unknownUnderWay = new Map<string, number>();
  /** When each login was last tried from an address it never signed in from (spaced past the budget). */
  private readonly lastUnknownTry = new Map<string, number>();
  private readonly failuresPerMinute: number;
  private readonly now: () => number;
  private sweptAt = 0;

  constructor(
    private readonly memory: SignInStore,
    options: SignInGuardOptions = {},
  ) {
    this.now = options.now ?? Date.now;
    this.pairs = new SignInThrottle({ freeFailures: options.pairFailures ?? 5 });
    this.addresses = new SignInThrottle({ freeFailures: options.addressFailures ?? 30 });
    this.logins = new SignInThrottle({ freeFailures: options.loginFailures ?? 20 });
    this.failuresPerMinute = options.failuresPerMinute ?? 300;
  }

  /**
   * Starts a sign-in: the milliseconds to wait before this login may be tried from this address (the attempt
   * is refused), or a ticket, and the attempt is under way until {@link finish}. One attempt per login and address is
   * under way at a time, 8 per address and 4 per login from new addresses: parallel guesses cannot all pass
   * before the first has failed.
   */
  async begin(login: string, address: string): Promise<{ waitMs: number } | SignInTicket> {
    const { loginKey, addressKey, pairKey } = this.keys(login, address);
    if (this.underWay.has(pairKey) || (this.underWayByAddress.get(addressKey) ?? 0) >= 8) return { waitMs: 1000 };
    // Under way from now: a second try of the pair, while this one reads the counts, waits for it.
    this.underWay.add(pairKey);
    this.underWayByAddress.set(addressKey, (this.underWayByAddress.get(addressKey) ?? 0) + 1);
    let passed = false;
    try {
      const minute = this.minuteKey();
      const [counts, known] = await Promise.all([
        this.memory.counts([countKey("pair", pairKey), countKey("address", addressKey), countKey("login", loginKey), minute], this.now() - FORGET_FAILURES_AFTER_MS),
        this.memory.isKnown(login, addressKey),
      ]);
      const now = this.now();
      let wait = Math.max(this.pairs.retryAfterMs(counts.get(countKey("pair", pairKey)), now), this.addresses.retryAfterMs(counts.get(countKey("address", addressKey)), now));
      if (!known) {
        wait = Math.max(wait, this.logins.retryAfterMs(counts.get(countKey("login", loginKey)), now));
        // Past the budget, a login is tried from new addresses once every 5 s at most: guessing slows to a crawl,
        // and the right user on an address it never signed in from (a new network) still gets in after a few seconds.
        if ((counts.get(minute)?.failures ?? 0) >= this.failuresPerMinute) wait = Math.max(wait, (this.lastUnknownTry.get(loginKey) ?? -Infinity) + SPACED_MS - now);
        // Guesses of one login from new addresses, checked at once, could all pass before the first failed.
        if ((this.unknownUnderWay.get(loginKey) ?? 0) >= 4) wait = Math.max(wait, 1000);
      }
      if (wait > 0) return { waitMs: wait };
      if (!known) {
        this.unknownUnderWay.set(loginKey, (this.unknownUnderWay.get(loginKey) ?? 0) + 1);
        this.lastUnknownTry.delete(loginKey);
        this.lastUnknownTry.set(loginKey, now);
        while (this.lastUnknownTry.size > SPACED_LOGINS) this.lastUnknownTry.delete(this.lastUnknownTry.keys().next().value!);
      }
      passed = true;
      return { login, address, known, finished: false };
    } finally {
      if (!passed) this.release(pairKey, addressKey);
    }
  }

  /**
   * Ends a sign-in {@link begin} let through. A wrong password counts against the pair, the address, and (from an
   * address the login never signed in from) the login. A right one clears the pair's count, and the address is
   * known for the user (`userId`) from then on. `null`: the password could not be checked (the database, a full
   * line of hashes), which counts for nothing.
   */
  async finish(ticket: SignInTicket, ok: boolean | null, userId?: string): Promise<void> {
    if (ticket.finished) return;
    ticket.finished = true;
    const { loginKey, addressKey, pairKey } = this.keys(ticket.login, ticket.address);
    this.release(pairKey, addressKey);
    // What begin counted, whatever the relay learnt since.
    if (!ticket.known) decrement(this.unknownUnderWay, loginKey);
    if (ok === null) return;
    const now = this.now();
    if (!ok) {
      const keys = [countKey("pair", pairKey), countKey("address", addressKey), this.minuteKey()];
      if (!ticket.known) keys.push(countKey("login", loginKey));
      await this.memory.fail(keys, now, FORGET_FAILURES_AFTER_MS);
      if (now - this.sweptAt >= SWEEP_EVERY_MS) {
        this.sweptAt = now;
        await this.memory.sweep(now - FORGET_FAILURES_AFTER_MS);
      }
      return;
    }
    await this.memory.clear(countKey("pair", pairKey));
    if (userId !== undefined) await this.memory.remember(userId, addressKey, now);
  }

  private release(pairKey: string, addressKey: string): void {
    this.underWay.delete(pairKey);
    decrement(this.underWayByAddress, addressKey);
  }

  private keys(login: string, address: string) {
    const loginKey = login.toLowerCase();
    const addressKey = throttledAddress(address);
    return { loginKey, addressKey, pairKey: `${loginKey}\u0000${addressKey}` };
  }

  /** The key of this minute's failures, every login and address together. */
  private minuteKey(): string {
    return `minute:${Math.floor(this.now() / 60_000)}`;
  }
}
