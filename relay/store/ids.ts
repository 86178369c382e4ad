import { randomBytes } from "node:crypto";

const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/** `length` uniformly random base62 characters from the OS CSPRNG (rejection sampling, no modulo bias). */
export function randomBase62(length: number): string {
  let out = "";
  while (out.length < length) {
    for (const b of randomBytes(length * 2)) {
      if (b < 248) out += ALPHABET[b % 62];
      if (out.length === length) break;
    }
  }
  return out;
}

/** A new identifier such as `mach_3kT9…` (`prefix` + `_` + 16 base62 characters). */
export function newId(prefix: "org" | "user" | "mach" | "stk" | "key" | "dep"): string {
  return `${prefix}_${randomBase62(16)}`;
}
