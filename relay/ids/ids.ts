import { randomBytes, randomFillSync } from "node:crypto";

const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/** `length` base62 characters from random bytes (rejection sampling: bytes of 248 and up are skipped, so no modulo bias). */
function base62(length: number, nextByte: () => number): string {
  let out = "";
  while (out.length < length) {
    const b = nextByte();
    if (b < 248) out += ALPHABET[b % 62];
  }
  return out;
}

/** `length` uniformly random base62 characters from the OS CSPRNG. */
export function randomBase62(length: number): string {
  const bytes = randomBytes(length * 2);
  let at = 0;
  return base62(length, () => (at < bytes.length ? bytes[at++]! : randomBytes(1)[0]!));
}

/**
 * Random base62 strings for ids made on every request (`chatcmpl-…`): the same characters as
 * {@link randomBase62}, from a pool of random bytes refilled 4 KiB at a time rather than a system call each.
 */
export class PooledBase62 {
  private readonly pool = Buffer.alloc(4096);
  private at = this.pool.length;

  next(length: number): string {
    return base62(length, () => {
      if (this.at === this.pool.length) {
        randomFillSync(this.pool);
        this.at = 0;
      }
      return this.pool[this.at++]!;
    });
  }
}

/** A new identifier such as `mach_3kT9…` (`prefix` + `_` + 16 base62 characters). */
export function newId(prefix: "org" | "user" | "mach" | "stk" | "key" | "dep" | "alert" | "msg"): string {
  return `${prefix}_${randomBase62(16)}`;
}

/**
 * `n` in base 36 (digits and lowercase letters, which every collation, PostgreSQL's locales included, sorts
 * as ASCII does), `width` characters: strings of one width sort as their numbers do.
 */
const base36 = (n: number, width: number) => n.toString(36).padStart(width, "0").slice(-width);

/**
 * Ids that sort as they were made (`aud_…`, `req_…`): `prefix`, `_` and 16 characters: the time (9), this
 * process's count (3: ids of one millisecond keep their order) and 4 random ones (two relays' ids of one
 * millisecond do not collide). {@link SortableIds.floor} is below every id made at or after a time.
 */
export class SortableIds {
  private seq = 0;
  /** Random bytes, drawn 4 KiB at a time (thousands of ids a second are made for the request log). */
  private readonly pool = Buffer.alloc(4096);
  private at = this.pool.length;

  constructor(private readonly prefix: "aud" | "req") {}

  next(at: number): string {
    this.seq = (this.seq + 1) % 36 ** 3;
    if (this.at === this.pool.length) {
      randomFillSync(this.pool);
      this.at = 0;
    }
    const random = this.pool.readUInt32BE(this.at);
    this.at += 4;
    return `${this.prefix}_${base36(at, 9)}${base36(this.seq, 3)}${base36(random % 36 ** 4, 4)}`;
  }

  /** A string that sorts below every id made at `at` or later, and above every id made before. */
  floor(at: number): string {
    return `${this.prefix}_${base36(Math.max(0, at), 9)}`;
  }
}
