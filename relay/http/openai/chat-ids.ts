import { randomFillSync } from "node:crypto";

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const POOL_BYTES = 4096;

/**
 * Makes `chatcmpl-…` ids (29 random base-62 characters, as the vendor's) from a pool of random bytes
 * filled 4 KiB at a time, rather than asking the system for random bytes on every request.
 */
export class ChatIds {
  private readonly pool = Buffer.alloc(POOL_BYTES);
  private at = POOL_BYTES;

  next(): string {
    let id = "chatcmpl-";
    while (id.length < 38) {
      if (this.at === POOL_BYTES) {
        randomFillSync(this.pool);
        this.at = 0;
      }
      const b = this.pool[this.at++]!;
      // 248 = 4 × 62: bytes above it would favour the first letters.
      if (b < 248) id += ALPHABET[b % 62];
    }
    return id;
  }
}
