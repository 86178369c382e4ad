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
export function newId(prefix: "org" | "user" | "mach" | "stk" | "key" | "dep"): string {
  return `${prefix}_${randomBase62(16)}`;
}
