import { MakinaError } from "../../proto/index.js";

/**
 * At most `slots` password hashes at once for the whole relay, and at most `waiting` more in line; past that a
 * sign-in is refused at once (429 `sign_in_throttled`, try again in a second). A hash is tens of ms of CPU on
 * libuv's thread pool, which the relay's file and name lookups share: a flood of sign-ins from anywhere
 * cannot take the pool, nor queue memory without end.
 */
export class HashSlots {
  private running = 0;
  private readonly line: (() => void)[] = [];

  constructor(
    private readonly slots = 2,
    private readonly waiting = 64,
  ) {}

  async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.running >= this.slots) {
      if (this.line.length >= this.waiting) throw new MakinaError("sign_in_throttled", "Too many sign-ins at once. Try again in a second.", { retryAfterMs: 1000 });
      await new Promise<void>((resolve) => this.line.push(resolve));
    } else {
      this.running++;
    }
    try {
      return await work();
    } finally {
      // The slot passes to the next in line, or is freed.
      const next = this.line.shift();
      if (next) next();
      else this.running--;
    }
  }
}
