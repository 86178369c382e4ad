import { isIP } from "node:net";
import { SignInThrottle } from "./sign-in-throttle.js";

/** Options of {@link SignInGuard}. */
export interface SignInGuardOptions {
  /** Failed sign-ins of one login from one address allowed before that pair waits. @default 5 */
  pairFailures?: number;
  /** Failed sign-ins from one address (any login) before it waits. @default 30 */
  addressFailures?: number;
  /** Failed sign-ins of one login from addresses it never signed in from, before those wait. @default 20 */
  loginFailures?: number;
  /** Failed sign-ins a minute, every login and address together, past which only known addresses may try. @default 300 */
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

function decrement(counts: Map<string, number>, key: string): void {
  const n = (counts.get(key) ?? 1) - 1;
  if (n > 0) counts.set(key, n);
  else counts.delete(key);
}

/** Logins remembered with the addresses they signed in from (the least recently used forgotten first). */
const KNOWN_LOGINS = 10_000;
/** Addresses remembered per login. */
const KNOWN_ADDRESSES_PER_LOGIN = 16;

/**
 * Decides whether a sign-in may be tried, so that guessing passwords is slow and yet an attacker cannot lock
 * the right user out:
 * - one login from one address (IPv6 by its /64) waits after 5 failures, doubling from 30 s to 15 minutes;
 * - one address waits after 30 failures, whatever the logins;
 * - one login waits after 20 failures from addresses it never signed in from (guessing from many addresses),
 *   while the addresses it did sign in from keep trying under their own count;
 * - past 300 failures a minute in all, a login is tried from addresses it never signed in from once every 5 s
 *   at most, until the next minute;
 * - one attempt per login and address is checked at a time, 8 per address, and 4 per login from addresses it
 *   never signed in from.
 * Memory stays bounded: idle counts are forgotten, and at most 10,000 logins' known addresses are kept.
 */
export class SignInGuard {
  private readonly pairs: SignInThrottle;
  private readonly addresses: SignInThrottle;
  private readonly logins: SignInThrottle;
  private readonly known = new Map<string, string[]>();
  /** Attempts under way, by login and address, and their count by address. */
  private readonly underWay = new Set<string>();
  private readonly underWayByAddress = new Map<string, number>();
  /** Attempts under way by login, from addresses it never signed in from. */
  private readonly unknownUnderWay = new Map<string, number>();
  /** When each login was last tried from an address it never signed in from (spaced past the budget). */
  private readonly lastUnknownTry = new Map<string, number>();
  private readonly failuresPerMinute: number;
  private readonly now: () => number;
  private minute = 0;
  private failuresThisMinute = 0;

  constructor(options: SignInGuardOptions = {}) {
    this.now = options.now ?? Date.now;
    this.pairs = new SignInThrottle({ freeFailures: options.pairFailures ?? 5, now: this.now });
    this.addresses = new SignInThrottle({ freeFailures: options.addressFailures ?? 30, now: this.now });
    this.logins = new SignInThrottle({ freeFailures: options.loginFailures ?? 20, now: this.now });
    this.failuresPerMinute = options.failuresPerMinute ?? 300;
  }

  /**
   * Starts a sign-in: the milliseconds to wait before this login may be tried from this address (the attempt
   * is refused), or a ticket, and the attempt is under way until {@link finish}. One attempt per login and address is
   * under way at a time, 8 per address and 4 per login from new addresses: parallel guesses cannot all pass
   * before the first has failed.
   */
  begin(login: string, address: string): { waitMs: number } | SignInTicket {
    const { loginKey, addressKey, pairKey } = this.keys(login, address);
    if (this.underWay.has(pairKey) || (this.underWayByAddress.get(addressKey) ?? 0) >= 8) return { waitMs: 1000 };
    const known = this.known.get(loginKey)?.includes(addressKey) ?? false;
    let wait = Math.max(this.pairs.retryAfterMs([pairKey]), this.addresses.retryAfterMs([addressKey]));
    if (!known) {
      wait = Math.max(wait, this.logins.retryAfterMs([loginKey]));
      // Past the budget, a login is tried from new addresses once every 5 s at most: guessing slows to a crawl,
      // and the right user on an address the relay does not know (a restart, another relay, a new network)
      // still gets in after a few seconds.
      this.rollMinute();
      if (this.failuresThisMinute >= this.failuresPerMinute) wait = Math.max(wait, (this.lastUnknownTry.get(loginKey) ?? -Infinity) + SPACED_MS - this.now());
      // Guesses of one login from new addresses, checked at once, could all pass before the first failed.
      if ((this.unknownUnderWay.get(loginKey) ?? 0) >= 4) wait = Math.max(wait, 1000);
    }
    if (wait > 0) return { waitMs: wait };
    if (!known) {
      this.unknownUnderWay.set(loginKey, (this.unknownUnderWay.get(loginKey) ?? 0) + 1);
      this.lastUnknownTry.delete(loginKey);
      this.lastUnknownTry.set(loginKey, this.now());
      while (this.lastUnknownTry.size > KNOWN_LOGINS) this.lastUnknownTry.delete(this.lastUnknownTry.keys().next().value!);
    }
    this.underWay.add(pairKey);
    this.underWayByAddress.set(addressKey, (this.underWayByAddress.get(addressKey) ?? 0) + 1);
    return { login, address, known, finished: false };
  }

  /**
   * Ends a sign-in {@link begin} let through. A wrong password counts against the pair, the address, and (from an
   * address the login never signed in from) the login. A right one clears the pair's count, and the address is
   * known for the login from then on. `null`: the password could not be checked (the database, a full line of
   * hashes), which counts for nothing.
   */
  finish(ticket: SignInTicket, ok: boolean | null): void {
    if (ticket.finished) return;
    ticket.finished = true;
    const { loginKey, addressKey, pairKey } = this.keys(ticket.login, ticket.address);
    this.underWay.delete(pairKey);
    decrement(this.underWayByAddress, addressKey);
    // What begin counted, whatever the relay learnt since.
    if (!ticket.known) decrement(this.unknownUnderWay, loginKey);
    if (ok === null) return;
    if (!ok) {
      this.rollMinute();
      this.failuresThisMinute++;
      this.pairs.failed([pairKey]);
      this.addresses.failed([addressKey]);
      if (!ticket.known) this.logins.failed([loginKey]);
      return;
    }
    this.pairs.succeeded(pairKey);
    const addresses = (this.known.get(loginKey) ?? []).filter((a) => a !== addressKey);
    addresses.push(addressKey);
    this.known.delete(loginKey);
    this.known.set(loginKey, addresses.slice(-KNOWN_ADDRESSES_PER_LOGIN));
    while (this.known.size > KNOWN_LOGINS) this.known.delete(this.known.keys().next().value!);
  }

  private keys(login: string, address: string) {
    const loginKey = login.toLowerCase();
    const addressKey = throttledAddress(address);
    return { loginKey, addressKey, pairKey: `${loginKey}\u0000${addressKey}` };
  }

  private rollMinute(): void {
    const minute = Math.floor(this.now() / 60_000);
    if (minute !== this.minute) {
      this.minute = minute;
      this.failuresThisMinute = 0;
    }
  }
}
