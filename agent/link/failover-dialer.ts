import type { LinkDialer } from "../../proto/index.js";
import type { GrpcDialer } from "./grpc-dialer.js";

/**
 * Links to one of several relays (`--server` repeated, all on one database): each new link goes to the
 * relay after the one the last link went to, so when a relay dies (or does not answer in time) the agent's
 * next attempt, after its jittered backoff, reaches another. The first relay is picked at random, which
 * spreads a fleet's machines over the relays.
 */
export class FailoverDialer {
  private next: number;
  /** The address the current (or last) link went to. */
  current: string;

  constructor(
    private readonly relays: { server: string; dialer: GrpcDialer }[],
    random: () => number = Math.random,
  ) {
    this.next = Math.floor(random() * relays.length) % relays.length;
    this.current = relays[this.next]!.server;
  }

  readonly dial: LinkDialer = (agent) => {
    const relay = this.relays[this.next]!;
    this.next = (this.next + 1) % this.relays.length;
    this.current = relay.server;
    // One connection at a time: one still opening to a relay left behind (busy, or gone) is closed, so a
    // fleet relinking under load does not leave every relay with handshakes nobody waits for.
    for (const other of this.relays) if (other !== relay) other.dialer.release();
    return relay.dialer.dial(agent);
  };

  close(): void {
    for (const { dialer } of this.relays) dialer.close();
  }
}
