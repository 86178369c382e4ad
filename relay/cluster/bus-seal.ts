import { createCipheriv, createDecipheriv, createSecretKey, hkdfSync, randomBytes, type CipherGCM, type DecipherGCM, type KeyObject } from "node:crypto";

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
export const SEAL_BYTES = 29 + 16 + 200;
/** How many of a lane's latest message numbers a receiver remembers (a later one than these, or one of these, is a replay or too late to tell). */
const WINDOW = 4096;
/** Senders (relay processes) remembered; the least recently heard goes first past this. */
const MAX_SENDERS = 1024;
/** Lanes a receiver follows per sender: a relay sends another its broadcasts and what is addressed to it, two. */
const MAX_LANES_PER_SENDER = 8;
/** Lanes a sender keeps apart (one per relay it addresses), past which what it addresses goes in the broadcast lane. */
const MAX_LANES = 4096;

const VERSION = 2;
const SESSION_BYTES = 16;
/** version (1) · the sender's session (16) · the lane (4) · the message's number in the lane (8). */
const HEADER_BYTES = 1 + SESSION_BYTES + 4 + 8;
const TAG_BYTES = 16;
const INFO = Buffer.from("makina relay bus v2");
/** The nonce: the header's last 12 bytes (the lane and the number in it), unique under the session's key. */
const NONCE_BYTES = 12;

/** A lane as its sender keeps it: the last number sent, and the cipher of the next made ahead. */
interface SendLane {
  index: number;
  sent: number;
  ahead?: { n: number; header: Buffer; cipher: Cipher };
  making: boolean;
}

/** A sender's lane as a receiver follows it: which of its latest numbers came, and the decipher of the next made ahead. */
interface ReceiveLane {
  highest: number;
  seen: Uint8Array;
  ahead?: { n: number; decipher: Decipher };
  making: boolean;
}

/** A sender as a receiver knows it: its key, its relay, and its lanes. */
interface Sender {
  key: KeyObject;
  relay: string;
  lanes: Map<number, ReceiveLane>;
  heardAt: number;
}

type Cipher = CipherGCM;
type Decipher = DecipherGCM;

/**
 * The seal on every message between relays (AES-256-GCM). Each relay process seals with a key of its own,
 * derived (HKDF-SHA256) from the secret the relays on one database share and a random session id sent with each
 * message. Its messages go in lanes: one for what every relay hears (announcements, events), one per relay it
 * addresses (requests, their replies and controls); each lane numbers its messages, and the lane and number are the
 * nonce, so no nonce repeats under a key. Inside the seal: the sending relay's id, the subject the message is for
 * and the time it was sealed. A receiver drops what does not authenticate, what was sealed for another subject,
 * what is older (or newer) than 30 s, and a number it has had in that lane already; a session stays bound to the
 * relay it first spoke for.
 *
 * Making a cipher is most of what sealing costs (Node makes one per message), so each lane's next cipher, and the
 * next decipher of each lane a relay receives, is made ahead, when the event loop is next free: a message crossing
 * finds them ready (`scripts/bench/bus-hop.mjs` measures what the seal adds to a hop).
 */
export class BusSeal {
  private readonly secret: Buffer;
  private readonly session = randomBytes(SESSION_BYTES);
  private readonly key: KeyObject;
  /** This relay's lanes, by the relay they address ("" for every relay). */
  private readonly lanes = new Map<string, SendLane>();
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

  /** The message as it goes on the bus, for `subject`; `to`: the one relay it is for, if it is for one. */
  seal(subject: string, body: unknown, to = ""): Uint8Array {
    const lane = this.laneTo(to);
    const n = ++lane.sent;
    const ready = lane.ahead?.n === n ? lane.ahead : undefined;
    lane.ahead = undefined;
    const { header, cipher } = ready ?? this.cipherFor(lane.index, n);
    const sealed = cipher.update(`${this.prefix}${JSON.stringify(subject)},"t":${this.now()},"b":${JSON.stringify(body)}}`, "utf8");
    cipher.final();
    const message = Buffer.concat([header, sealed, cipher.getAuthTag()]);
    this.makeAhead(lane, () => {
      lane.ahead = { n: lane.sent + 1, ...this.cipherFor(lane.index, lane.sent + 1) };
    });
    return message;
  }

  /** The sender and body of a message that came on `subject`, or why it is dropped. */
  open(subject: string, data: Uint8Array): Opened | BusDrop {
    const bytes = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
    if (bytes.length < HEADER_BYTES + TAG_BYTES || bytes[0] !== VERSION) return "unauthenticated";
    const header = bytes.subarray(0, HEADER_BYTES);
    const sessionId = header.toString("base64", 1, 1 + SESSION_BYTES);
    const laneIndex = header.readUInt32BE(1 + SESSION_BYTES);
    const n = header.readUInt32BE(5 + SESSION_BYTES) * 2 ** 32 + header.readUInt32BE(9 + SESSION_BYTES);
    const known = this.senders.get(sessionId);
    const key = known?.key ?? this.derive(header.subarray(1, 1 + SESSION_BYTES));
    const lane = known?.lanes.get(laneIndex);
    const ready = lane?.ahead?.n === n ? lane.ahead.decipher : undefined;
    if (lane) lane.ahead = undefined;
    let text: string;
    try {
      const decipher = ready ?? this.decipherFor(key, header);
      decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES));
      const plain = decipher.update(bytes.subarray(HEADER_BYTES, bytes.length - TAG_BYTES));
      decipher.final();
      text = plain.toString("utf8");
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
    const sender = known ?? this.remember(sessionId, key, m.r, now);
    // A session speaks for the relay it first spoke for.
    if (sender.relay !== m.r) return "impersonating";
    const following = lane ?? this.follow(sender, laneIndex, n);
    // A holder of the key opening more lanes than relays use: trusted alike, but not followed without bound.
    if (following === undefined) return "unauthenticated";
    if (!this.fresh(following, n)) return "replayed";
    sender.heardAt = now;
    this.makeAhead(following, () => {
      const next = following.highest + 1;
      const nextHeader = Buffer.from(header);
      nextHeader.writeUInt32BE(Math.floor(next / 2 ** 32), 5 + SESSION_BYTES);
      nextHeader.writeUInt32BE(next >>> 0, 9 + SESSION_BYTES);
      following.ahead = { n: next, decipher: this.decipherFor(sender.key, nextHeader) };
    });
    return { sender: m.r, body: m.b };
  }

  /** The key of a session (a KeyObject: OpenSSL takes it without importing its bytes again for each message). */
  private derive(session: Buffer): KeyObject {
    return createSecretKey(Buffer.from(hkdfSync("sha256", this.secret, session, INFO, 32)));
  }

  private laneTo(to: string): SendLane {
    let lane = this.lanes.get(to);
    if (lane === undefined) {
      // Past the bound (relays by the thousand), what is addressed goes in the broadcast lane: still sealed, just not made ahead as well.
      if (this.lanes.size >= MAX_LANES && to !== "") return this.laneTo("");
      lane = { index: this.lanes.size, sent: 0, making: false };
      this.lanes.set(to, lane);
    }
    return lane;
  }

  /** The header and cipher of message `n` of a lane (its header as associated data). */
  private cipherFor(laneIndex: number, n: number): { header: Buffer; cipher: Cipher } {
    const header = Buffer.allocUnsafe(HEADER_BYTES);
    header[0] = VERSION;
    this.session.copy(header, 1);
    header.writeUInt32BE(laneIndex, 1 + SESSION_BYTES);
    header.writeUInt32BE(Math.floor(n / 2 ** 32), 5 + SESSION_BYTES);
    header.writeUInt32BE(n >>> 0, 9 + SESSION_BYTES);
    const cipher = createCipheriv("aes-256-gcm", this.key, header.subarray(HEADER_BYTES - NONCE_BYTES));
    cipher.setAAD(header);
    return { header, cipher };
  }

  private decipherFor(key: KeyObject, header: Buffer): Decipher {
    const decipher = createDecipheriv("aes-256-gcm", key, header.subarray(HEADER_BYTES - NONCE_BYTES));
    decipher.setAAD(header);
    return decipher;
  }

  /** Runs `make` once the event loop is free (once per lane at a time). */
  private makeAhead(lane: { making: boolean }, make: () => void): void {
    if (lane.making) return;
    lane.making = true;
    setImmediate(() => {
      lane.making = false;
      make();
    });
  }

  private remember(sessionId: string, key: KeyObject, relay: string, now: number): Sender {
    // A sender silent this long can only send stale messages now: forgetting it lets no replay through.
    for (const [id, s] of this.senders) if (now - s.heardAt > 2 * MAX_AGE_MS) this.senders.delete(id);
    if (this.senders.size >= MAX_SENDERS) {
      // The one heard from least lately (its later messages are stale by the time it could be missed).
      let oldest: string | undefined;
      let at = Infinity;
      for (const [id, s] of this.senders) if (s.heardAt < at) [oldest, at] = [id, s.heardAt];
      if (oldest !== undefined) this.senders.delete(oldest);
    }
    const sender: Sender = { key, relay, lanes: new Map(), heardAt: now };
    this.senders.set(sessionId, sender);
    return sender;
  }

  /** A lane of a sender, followed from number `n` on; undefined past the lanes followed per sender. */
  private follow(sender: Sender, index: number, n: number): ReceiveLane | undefined {
    if (sender.lanes.size >= MAX_LANES_PER_SENDER) return undefined;
    const lane: ReceiveLane = { highest: n - 1, seen: new Uint8Array(WINDOW), making: false };
    sender.lanes.set(index, lane);
    return lane;
  }

  /** Whether number `n` of this lane is new, marking it seen. */
  private fresh(lane: ReceiveLane, n: number): boolean {
    if (n > lane.highest) {
      // The numbers skipped are unseen (not come yet, or lost); those leaving the window are forgotten.
      for (let k = Math.max(lane.highest + 1, n - WINDOW + 1); k <= n; k++) lane.seen[k % WINDOW] = 0;
      lane.highest = n;
    } else if (lane.highest - n >= WINDOW || lane.seen[n % WINDOW]) return false;
    lane.seen[n % WINDOW] = 1;
    return true;
  }
}
