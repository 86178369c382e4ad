import { MakinaError } from "../../proto/index.js";

/** Which line a password hash waits in. */
export type HashLane =
  /** A sign-in from an address the login signed in from before, or a signed-in person changing a password. */
  | "known"
  /** Anyone else: a sign-in from an address the relay does not know for that login. */
  | "other";

/**
 * At most `slots` password hashes at once for the whole relay; past that a hash waits in one of two lines, and
 * past a full line a sign-in is refused at once (429 `sign_in_throttled`, try again in a second). A hash is tens
 * of ms of CPU on libuv's thread pool, which the relay's file and name lookups share: a flood of sign-ins from
 * anywhere cannot take the pool, nor queue memory without end. People signing in from where they did before
 * have a line of their own (`knownWaiting` places), served first: a flood from fresh addresses, which fills the
 * other line (`waiting` places), cannot keep them out.
 */
export class HashSlots {
  private running = 0;
  private readonly known: (() => void)[] = [];
  private readonly others: (() => void)[] = [];

  constructor(
    private readonly slots = 2,
    private readonly waiting = 64,
    private readonly knownWaiting = 16,
  ) {}

  async run<T>(work: () => Promise<T>, lane: HashLane = "other"): Promise<T> {
    if (this.running >= this.slots) {
      const line = lane === "known" ? this.known : this.others;
      if (line.length >= (lane === "known" ? this.knownWaiting : this.waiting)) {
        throw new MakinaError("sign_in_throttled", "Too many sign-ins at once. Try again in a second.", { retryAfterMs: 1000 });
      }
      await new Promise<void>((resolve) => line.push(resolve));
    } else {
      this.running++;
    }
    try {
      return await work();
    } finally {
      // The known line first: its slot goes to a person the relay knows, whatever waits in the other.
      const next = this.known.shift() ?? this.others.shift();
      if (next) next();
      else this.running--;
    }
  }
}
