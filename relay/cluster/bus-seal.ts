import { createCipheriv, createDecipheriv, createSecretKey, hkdfSync, randomBytes, type KeyObject } from "node:crypto";

/** Why a message on the bus was dropped. */
export type BusDrop =
  /** Not sealed, or not with the relays' key (a client on the bus that is no relay), or altered on the way. */
  | "unauthenticated"
  /** Sealed for another subject than the one it came on (a relay's genuine message sent elsewhere). */
  | "misaddressed"
  /** Sealed more than {@link MAX_AGE_MS} ago or ahead (a message kept and sent again later, or a clock far off). */
  | "stale"
  /** A message that came already. */
  | "replayed"
  /** Authenticated, but it speaks for another relay than its sender (a request, reply or announcement of another's). */
  | "impersonating";

export const BUS_DROPS: readonly BusDrop[] = ["unauthenticated", "misaddressed", "stale", "replayed", "impersonating"];

/** What an authenticated message says: the relay that sealed it, and its body. */
export interface Opened {
  sender: string;
  body: unknown;
}

/** How far a message's time may be from the receiver's clock. */
export const MAX_AGE_MS = 30_000;
/** Bytes a seal adds to a message, at most (its header, tag, and sender, subject and time inside), for subjects of up to 100 characters. */
export const SEAL_BYTES = 25 + 16 + 200;
/** How many of a sender's latest message numbers a receiver remembers (a later one than these, or one of these, is a replay or too late to tell). */
const WINDOW = 4096;
/** Senders (relay processes) remembered; the least recently heard goes first past this. */
const MAX_SENDERS = 1024;

const VERSION = 1;
const SESSION_BYTES = 16;
/** version (1) · the sender's session (16) · the message's number in it (8). */
const HEADER_BYTES = 1 + SESSION_BYTES + 8;
const TAG_BYTES = 16;
const INFO = Buffer.from("makina relay bus v1");
/** The nonce: the header's last 12 bytes (the session's last 4, fixed for its key, and the message's number). */
const NONCE_BYTES = 12;

/** A sender as a receiver knows it: its key, its relay, and which of its latest numbers came. */
interface Sender {
  key: KeyObject;
  relay: string;
  highest: number;
  seen: Uint8Array;
  heardAt: number;
}

/**
 * The seal on every message between relays (AES-256-GCM). Each relay process seals with a key of its own,
 * derived (HKDF-SHA256) from the secret the relays on one database share and a random session id sent with each
 * message, and numbers its messages; the number is in the nonce, so no nonce repeats under a key. Inside the seal:
 * the sending relay's id, the subject the message is for and the time it was sealed. A receiver drops what does
 * not authenticate, what was sealed for another subject, what is older (or newer) than 30 s, and a number it
 * has had from that session already; a session stays bound to the relay it first spoke for.
 */
export class BusSeal {
  private readonly secret: Buffer;
  private readonly session = randomBytes(SESSION_BYTES);
  private readonly key: KeyObject;
  private counter = 0;
  private readonly senders = new Map<string, Sender>();
  private readonly prefix: string;

  constructor(
    secret: string,
    relayId: string,
    private readonly now: () => number = Date.now,
  ) {
    this.secret = Buffer.from(secret, "utf8");
    this.key = this.derive(this.session);
    this.prefix = `{"r":${JSON.stringify(relayId)},"s":`;
  }

  /** The message as it goes on the bus, for `subject`. */
  seal(subject: string, body: unknown): Uint8Array {
    const header = Buffer.allocUnsafe(HEADER_BYTES);
    header[0] = VERSION;
    this.session.copy(header, 1);
    const n = ++this.counter;
    header.writeUInt32BE(Math.floor(n / 2 ** 32), HEADER_BYTES - 8);
    header.writeUInt32BE(n >>> 0, HEADER_BYTES - 4);
    const cipher = createCipheriv("aes-256-gcm", this.key, header.subarray(HEADER_BYTES - NONCE_BYTES));
    cipher.setAAD(header);
    const sealed = cipher.update(`${this.prefix}${JSON.stringify(subject)},"t":${this.now()},"b":${JSON.stringify(body)}}`, "utf8");
    cipher.final();
    return Buffer.concat([header, sealed, cipher.getAuthTag()]);
  }

  /** The sender and body of a message that came on `subject`, or why it is dropped. */
  open(subject: string, data: Uint8Array): Opened | BusDrop {
    const bytes = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
    if (bytes.length < HEADER_BYTES + TAG_BYTES || bytes[0] !== VERSION) return "unauthenticated";
    const header = bytes.subarray(0, HEADER_BYTES);
    const sessionId = header.toString("base64", 1, 1 + SESSION_BYTES);
    const n = header.readUInt32BE(1 + SESSION_BYTES) * 2 ** 32 + header.readUInt32BE(5 + SESSION_BYTES);
    const known = this.senders.get(sessionId);
    const key = known?.key ?? this.derive(header.subarray(1, 1 + SESSION_BYTES));
    let text: string;
    try {
      const decipher = createDecipheriv("aes-256-gcm", key, header.subarray(HEADER_BYTES - NONCE_BYTES));
      decipher.setAAD(header);
      decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES));
      text = decipher.update(bytes.subarray(HEADER_BYTES, bytes.length - TAG_BYTES)).toString("utf8") + decipher.final("utf8");
    } catch {
      return "unauthenticated";
    }
    let m: { r: string; s: string; t: number; b: unknown };
    try {
      m = JSON.parse(text) as typeof m;
    } catch {
      return "unauthenticated";
    }
    // Sealed by a relay, so well formed; checked all the same, as anything read from outside.
    if (typeof m !== "object" || m === null || typeof m.r !== "string" || typeof m.s !== "string" || !Number.isFinite(m.t)) return "unauthenticated";
    if (m.s !== subject) return "misaddressed";
    const now = this.now();
    if (Math.abs(now - m.t) > MAX_AGE_MS) return "stale";
    const sender = known ?? this.remember(sessionId, key, m.r, n, now);
    // A session speaks for the relay it first spoke for.
    if (sender.relay !== m.r) return "impersonating";
    if (!this.fresh(sender, n)) return "replayed";
    sender.heardAt = now;
    return { sender: m.r, body: m.b };
  }

  /** The key of a session (a KeyObject: OpenSSL takes it without importing its bytes again for each message). */
  private derive(session: Buffer): KeyObject {
    return createSecretKey(Buffer.from(hkdfSync("sha256", this.secret, session, INFO, 32)));
  }

  private remember(sessionId: string, key: KeyObject, relay: string, n: number, now: number): Sender {
    // A sender silent this long can only send stale messages now: forgetting it lets no replay through.
    for (const [id, s] of this.senders) if (now - s.heardAt > 2 * MAX_AGE_MS) this.senders.delete(id);
    if (this.senders.size >= MAX_SENDERS) {
      // The one heard from least lately (its later messages are stale by the time it could be missed).
      let oldest: string | undefined;
      let at = Infinity;
      for (const [id, s] of this.senders) if (s.heardAt < at) [oldest, at] = [id, s.heardAt];
      if (oldest !== undefined) this.senders.delete(oldest);
    }
    const sender: Sender = { key, relay, highest: n - 1, seen: new Uint8Array(WINDOW), heardAt: now };
    this.senders.set(sessionId, sender);
    return sender;
  }

  /** Whether number `n` of this sender is new, marking it seen. */
  private fresh(sender: Sender, n: number): boolean {
    if (n > sender.highest) {
      // The numbers skipped are unseen (sent to subjects this relay does not hear); those leaving the window are forgotten.
      for (let k = Math.max(sender.highest + 1, n - WINDOW + 1); k <= n; k++) sender.seen[k % WINDOW] = 0;
      sender.highest = n;
    } else if (sender.highest - n >= WINDOW || sender.seen[n % WINDOW]) return false;
    sender.seen[n % WINDOW] = 1;
    return true;
  }
}
