import { createHmac, hkdfSync, timingSafeEqual } from "node:crypto";

/** Bytes of a tag: 128 bits, base64url in 22 characters. */
const TAG_BYTES = 16;

/**
 * The tag on the change feed's own notifications (a writer's barrier, a relay's acknowledgement of it, a relay's
 * ping to itself): an HMAC-SHA256, with a key derived from the secret the relays on the database share, of what
 * the notification says and who it is for. Any role of the database can `pg_notify` a channel; only a relay can
 * tag, so a forged acknowledgement cannot end a writer's wait before the relays have the change, nor a forged
 * ping hold a relay's lease. (The changes themselves are announced by the database's triggers, untagged: a
 * forged one only makes relays read a row again.)
 */
export class FeedMac {
  private readonly key: Buffer;

  constructor(secret: string) {
    this.key = Buffer.from(hkdfSync("sha256", Buffer.from(secret), Buffer.alloc(0), "makina change feed v1", 32));
  }

  /** The tag of a notification's parts. */
  tag(...parts: string[]): string {
    return createHmac("sha256", this.key).update(parts.join("\n")).digest().subarray(0, TAG_BYTES).toString("base64url");
  }

  /** Whether `tag` is the tag of `parts`. */
  holds(tag: string | undefined, ...parts: string[]): boolean {
    if (tag === undefined) return false;
    const given = Buffer.from(tag, "base64url");
    const wanted = Buffer.from(this.tag(...parts), "base64url");
    return given.length === wanted.length && timingSafeEqual(given, wanted);
  }
}
