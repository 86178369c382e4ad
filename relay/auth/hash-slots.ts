import { MakinaError, Slots } from "../../proto/index.js";

/**
 * At most `slots` password hashes at once for the whole relay, and at most `waiting` more in line; past that a
 * sign-in is refused at once (429 `sign_in_throttled`, try again in a second). A hash is tens of ms of CPU on
 * libuv's thread pool, which the relay's file and name lookups share: a flood of sign-ins from anywhere
 * cannot take the pool, nor queue memory without end.
 */
export class HashSlots extends Slots {
  constructor(slots = 2, waiting = 64) {
    super(slots, waiting, () => new MakinaError("sign_in_throttled", "Too many sign-ins at once. Try again in a second.", { retryAfterMs: 1000 }));
  }
}
