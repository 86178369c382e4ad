import { MakinaError, Slots } from "../../proto/index.js";

/**
 * At most 2 password hashes at once for the whole relay, and at most 64 more in line; past that a sign-in is
 * refused at once (429 `sign_in_throttled`, try again in a second). A hash is tens of ms of CPU on libuv's
 * thread pool, which the relay's file and name lookups share: a flood of sign-ins from anywhere cannot take the
 * pool, nor queue memory without end. Sign-ins from an address the login signed in from before, and a
 * signed-in person's password change, are asked `first`: 16 places of their own, served first, so a flood
 * from fresh addresses, which fills the other line, cannot keep them out.
 */
export class HashSlots extends Slots {
  constructor(slots = 2, waiting = 64, known = 16) {
    super(slots, waiting, () => new MakinaError("sign_in_throttled", "Too many sign-ins at once. Try again in a second.", { retryAfterMs: 1000 }), known);
  }
}
