import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import type { LinkDialer } from "../../proto/index.js";

/** What the failover dials one relay address with (a {@link GrpcDialer}, or the fleet benchmark's stand-in). */
export interface RelayDialer {
  readonly dial: LinkDialer;
  /** Releases its connection for good. */
  close(): void;
  /** Releases its connection; the next dial opens a new one. */
  release(): void;
}

/** Every address of a host name, in the resolver's order. */
export type ResolveHost = (host: string) => Promise<{ address: string; family: number }[]>;

/** The system's resolver (`getaddrinfo`: /etc/hosts, then DNS). */
export const systemResolver: ResolveHost = (host) => lookup(host, { all: true });

/** Options of {@link FailoverDialer}. */
export interface FailoverOptions {
  /** The relays as given (`--server`, repeated): `host:port`, the host an IP address or a name. */
  servers: readonly string[];
  /** Makes the dialer of one address to dial; `server` is the entry it came from (its name, for TLS). */
  dialer: (address: string, server: string) => RelayDialer;
  /** @default systemResolver */
  resolve?: ResolveHost;
  /** @default Math.random */
  random?: () => number;
}

/** One address to dial, and the `--server` entry it came from. */
interface Target {
  address: string;
  server: string;
}

/** The host and port of `host:port` or `[v6]:port`. */
function splitServer(server: string): { host: string; port: string } {
  const m = /^\[?([^\]]*?)\]?:(\d+)$/.exec(server);
  return m ? { host: m[1]!, port: m[2]! } : { host: server, port: "" };
}

/**
 * Links to one of several relays (all on one database): `--server` repeated, or a name with several
 * addresses (each is a relay, as if given on its own). Each new link goes to the address after the one the
 * last link went to, so when a relay dies (or does not answer in time) the agent's next attempt, after its
 * jittered backoff, reaches another. The first address is picked at random, which spreads a fleet's machines
 * over the relays.
 *
 * Names are resolved again after every dial, so the next one follows relays added to or removed from DNS;
 * while a name cannot be resolved, its last addresses (or the name itself, left to gRPC) are dialed. Of a
 * name's addresses, the IPv4 ones are dialed, or the IPv6 ones when it has none: a name with both families
 * most often names the same host twice (`localhost` as 127.0.0.1 and ::1), not two relays, and a relay
 * listening on one family would refuse every other dial.
 */
export class FailoverDialer {
  private targets: Target[];
  private next: number;
  private readonly dialers = new Map<string, RelayDialer>();
  private readonly resolve: ResolveHost;
  private resolving: Promise<void> | undefined;
  private readonly random: () => number;
  /** Whether a link was dialed yet (before, the start is picked at random among the addresses). */
  private dialed = false;
  /** The address the current (or last) link went to. */
  current: string;

  constructor(private readonly options: FailoverOptions) {
    this.resolve = options.resolve ?? systemResolver;
    this.random = options.random ?? Math.random;
    this.targets = options.servers.map((server) => ({ address: server, server }));
    this.next = this.pick(this.targets.length);
    this.current = this.targets[this.next]!.address;
  }

  /** How many addresses links go round (every relay, once the names are resolved). */
  get addresses(): number {
    return this.targets.length;
  }

  /** The addresses links go round. */
  get rotation(): readonly string[] {
    return this.targets.map((t) => t.address);
  }

  readonly dial: LinkDialer = (agent) => {
    const target = this.targets[this.next % this.targets.length]!;
    this.next = (this.next + 1) % this.targets.length;
    this.current = target.address;
    this.dialed = true;
    let chosen = this.dialers.get(target.address);
    if (!chosen) {
      chosen = this.options.dialer(target.address, target.server);
      this.dialers.set(target.address, chosen);
    }
    // One connection at a time: one still opening to a relay left behind (busy, or gone) is closed, so a
    // fleet relinking under load does not leave every relay with handshakes nobody waits for.
    for (const [address, other] of this.dialers) {
      if (other === chosen) continue;
      other.release();
      if (!this.targets.some((t) => t.address === address)) this.dialers.delete(address);
    }
    void this.refresh();
    return chosen.dial(agent);
  };

  /**
   * Resolves every name again and goes on from the current address in the new list (at the same place when
   * it is gone). Never rejects: a name that cannot be resolved keeps its last addresses. Resolves after
   * `timeoutMs` at the latest (the list is then updated whenever the resolver answers).
   */
  async refresh(timeoutMs = Infinity): Promise<void> {
    this.resolving ??= this.expand()
      .then((targets) => {
        if (targets.map((t) => t.address).join() === this.rotation.join()) return;
        const at = targets.findIndex((t) => t.address === this.current);
        // Before the first link, a start at random among every address: a fleet given one name spreads.
        this.next = !this.dialed ? this.pick(targets.length) : at >= 0 ? (at + 1) % targets.length : this.next % targets.length;
        this.targets = targets;
      })
      .finally(() => (this.resolving = undefined));
    if (timeoutMs === Infinity) return this.resolving;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.resolving, new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)))]);
    clearTimeout(timer);
  }

  private pick(n: number): number {
    return Math.floor(this.random() * n) % n;
  }

  private async expand(): Promise<Target[]> {
    const lists = await Promise.all(
      this.options.servers.map(async (server): Promise<Target[]> => {
        const { host, port } = splitServer(server);
        if (isIP(host) || !port) return [{ address: server, server }];
        const found = await this.resolve(host).catch(() => []);
        const family = found.some((a) => a.family === 4) ? 4 : 6;
        const addresses = [...new Set(found.filter((a) => a.family === family).map((a) => (family === 6 ? `[${a.address}]:${port}` : `${a.address}:${port}`)))];
        if (addresses.length) return addresses.map((address) => ({ address, server }));
        // Not resolved now: the addresses it had, or the name itself.
        const before = this.targets.filter((t) => t.server === server);
        return before.length ? before : [{ address: server, server }];
      }),
    );
    const seen = new Set<string>();
    return lists.flat().filter((t) => !seen.has(t.address) && seen.add(t.address));
  }

  close(): void {
    for (const dialer of this.dialers.values()) dialer.close();
  }
}
