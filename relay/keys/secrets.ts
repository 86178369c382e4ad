import { createHash, randomBytes, scrypt, timingSafeEqual } from "node:crypto";
import { randomBase62 } from "../ids/index.js";

/** Kinds of secret the relay issues, by prefix. */
export type SecretPrefix = "mk_live_" | "mk_mach_" | "mk_admin_";

/** A new secret: the prefix followed by 40 random base62 characters (≈238 bits). */
export function newSecret(prefix: SecretPrefix): string {
  return prefix + randomBase62(40);
}

/**
 * Hash under which a secret is stored. Secrets are 238-bit random strings, so a
 * fast hash is safe here (no dictionary to attack) and keeps lookups an index hit.
 */
export function hashSecret(secret: string): string {
  return createHash("sha256").update(secret, "utf8").digest("hex");
}

/** Compares two hex hashes in constant time. */
export function hashesEqual(a: string, b: string): boolean {
  const x = Buffer.from(a, "hex");
  const y = Buffer.from(b, "hex");
  return x.length === y.length && x.length > 0 && timingSafeEqual(x, y);
}

/** A secret shortened for display and logs: first 8 and last 4 characters at most. */
export function maskSecret(secret: string): string {
  return secret.length <= 12 ? `${secret.slice(0, 4)}…` : `${secret.slice(0, 8)}…${secret.slice(-4)}`;
}

/** scrypt on libuv's thread pool: a hash (tens of ms of CPU) never holds the relay's event loop. */
function scryptAsync(password: string, salt: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => scrypt(password, salt, 32, (err, key) => (err ? reject(err) : resolve(key))));
}

/** scrypt hash of a human password, `scrypt$salt$hash` (hex), computed off the event loop. */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  return `scrypt$${salt.toString("hex")}$${(await scryptAsync(password, salt)).toString("hex")}`;
}

/** Whether `password` matches a {@link hashPassword} hash, computed off the event loop. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [kind, salt, hash] = stored.split("$");
  if (kind !== "scrypt" || !salt || !hash) return false;
  return hashesEqual((await scryptAsync(password, Buffer.from(salt, "hex"))).toString("hex"), hash);
}
