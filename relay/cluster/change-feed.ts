import { setTimeout as sleep } from "node:timers/promises";
import type { Client } from "pg";
import { sql } from "kysely";
import { WarningThrottle, type Logger } from "../../proto/index.js";
import type { GatewayDirectory } from "../routing/index.js";
import { databaseNowMs, type Store, type StoreChange } from "../store/index.js";
import { FeedMac } from "./feed-mac.js";

/** The channel every committed change and every barrier goes out on, in commit order. */
const CHANGES = "makina_changes";

/** How long a relay not seen (its pings stopped) counts as gone, at the least: its machines are shown offline. */
const GONE_AFTER_MS = 30_000;

/** How often each relay looks for relays gone and their machines. */
const SWEEP_MS = 10_000;

/**
 * The advisory lock a relay of the release before several relays per database held alone on its database.
 * Relays of this release hold it shared: an older relay still running keeps them from starting (it would serve
 * keys revoked through them), and none of them running keeps an older one from starting.
 */
const ONE_RELAY_LOCK = "7247031196208271002";

/** Refusal when a relay of the release before runs on the database. */
export class OlderRelayRunningError extends Error {
  constructor() {
    super(
      "A relay of an older Makina runs on this PostgreSQL database; it would not hear of changes made through this one. " +
        "Stop it (upgrade it) first: relays of this release share a database, the older one does not.",
    );
    this.name = "OlderRelayRunningError";
  }
}

/** What the relay does with what the feed brings besides the gateway's directory. */
export interface ChangeFeedHooks {
  /** A machine's token changed (rotated, revoked): its link, if this relay holds it, must end. */
  machineChanged(machineId: string): void;
  /** A user was disabled, re-roled, given a new password or deleted: its event streams on this relay must end. */
  userChanged(userId: string): void;
  /** Machines shown online through relays that are gone were marked offline. */
  machinesOffline(machines: { id: string; orgId: string }[]): void;
  /**
   * Everything was loaded whole again after the feed's connection came back: changes to machines missed
   * meanwhile must be looked at (links of machines revoked meanwhile end; those held are marked online again).
   */
  caughtUp(): Promise<void>;
}

export interface ChangeFeedOptions {
  url: string;
  relayId: string;
  /** What other relays read of this one (the relays table): its URL and the address agents dial. */
  describe: () => { url: string | null; linkAddress: string | null };
  store: Store;
  directory: GatewayDirectory;
  /** How long this relay serves from memory without hearing from the feed (and how long a writer waits at most). */
  leaseMs: number;
  /** The secret the relays on the database share: it tags the feed's barriers, acknowledgements and pings. */
  secret: string;
  hooks: ChangeFeedHooks;
  log: Logger;
}

interface Barrier {
  waiting: Set<string>;
  resolve: () => void;
}

/**
 * How every relay on one PostgreSQL database sees every change at once: the guarantee is that when a write's
 * admin call answers, every relay running on the database serves the next request by it (a key revoked
 * through relay A is refused by relay B a millisecond later).
 *
 * - **Announced by the database.** Triggers on the tables the relays hold in memory (keys, organizations,
 *   deployed stacks, machine tokens, users, settings) `pg_notify` each committed change, whoever made it, inside its
 *   transaction; PostgreSQL delivers notifications to every listener in commit order. Each relay listens on one
 *   connection of its own and applies them in order to its {@link GatewayDirectory}.
 * - **Acknowledged before the writer answers.** After a write, the relay that made it sends a barrier on the same
 *   channel and waits until every other live relay (the `relays` table) answers that it got there, which means
 *   it has applied every change committed before: one round trip, a few ms.
 * - **Leased.** A relay serves from memory only while it hears from the feed: every `leaseMs / 5` it notifies
 *   itself through the database (recording it is alive in the same statement), and each ping that comes back,
 *   after every change committed before it was applied, lets it serve for `leaseMs` from when the ping was sent.
 *   A relay cut from the database stops serving (503 `storage_unavailable`) at most `leaseMs` after it last
 *   heard; a writer waits for a relay that does not answer at most that long, after which that relay is either
 *   current or refusing. Back on the database, the relay listens again, loads everything whole, and serves once
 *   its next ping returns.
 *
 * One relay on its own database keeps its lease as long as PostgreSQL answers within `leaseMs`: a restart
 * shorter than that is not seen by clients.
 */
export class ChangeFeed {
  private client: Client | undefined;
  /** Bumped with each connection: what an old one left queued does not renew the lease. */
  private generation = 0;
  private pingSeq = 0;
  private readonly pingsSent = new Map<number, number>();
  private barrierSeq = 0;
  private readonly barriers = new Map<number, Barrier>();
  private readonly timers: NodeJS.Timeout[] = [];
  private reconnect: NodeJS.Timeout | undefined;
  private stopped = false;
  private readonly ownChannel: string;
  private readonly startedAt = Date.now();
  private leaseResolve: (() => void) | undefined;
  /** The connection whose whole load succeeded: acknowledgements and lease renewals wait for it. */
  private loadedGeneration = 0;
  /** The longest lease among the relays a barrier last saw: what a writer waits for when it cannot look. */
  private longestLeaseMs: number;
  /** The ping being sent, so a stop waits for it before taking this relay off the table. */
  private pinging: Promise<unknown> = Promise.resolve();

  private readonly mac: FeedMac;
  /** Notifications dropped for a tag that does not hold (another client of the database), said once a minute. */
  private readonly forged = new WarningThrottle(60_000);

  private constructor(private readonly options: ChangeFeedOptions) {
    this.ownChannel = `makina_relay_${options.relayId}`;
    this.longestLeaseMs = options.leaseMs;
    this.mac = new FeedMac(options.secret);
  }

  /** Connects, registers this relay and holds its first lease before it resolves. */
  static async start(options: ChangeFeedOptions): Promise<ChangeFeed> {
    const feed = new ChangeFeed(options);
    const leased = new Promise<void>((resolve) => (feed.leaseResolve = resolve));
    await feed.connect(true);
    feed.timers.push(setInterval(() => feed.ping(), Math.max(50, Math.floor(options.leaseMs / 5))));
    feed.timers.push(setInterval(() => void feed.sweep(), SWEEP_MS));
    for (const t of feed.timers) t.unref();
    feed.ping();
    const timeout = new AbortController();
    try {
      await Promise.race([
        leased,
        sleep(options.leaseMs * 3, undefined, { signal: timeout.signal }).then(() => Promise.reject(new Error("the change feed's first ping did not come back from PostgreSQL"))),
      ]);
    } catch (err) {
      await feed.stop();
      throw err;
    } finally {
      timeout.abort();
    }
    // Machines left online by relays gone (this relay's previous run too) are offline before it serves.
    await feed.sweep();
    return feed;
  }

  /** Whether the feed's connection is up now (for /health). */
  get connected(): boolean {
    return this.client !== undefined;
  }

  /**
   * Waits until every other relay on the database has applied every change committed before this call, or
   * has stopped serving from memory: the store calls it after each write, before the admin API answers.
   */
  async barrier(): Promise<void> {
    const { relayId, store, log } = this.options;
    const startedAt = performance.now();
    // Past this, a relay that did not answer has let its lease run out (its last ping came back before the change).
    const deadline = (leaseMs: number) => startedAt + leaseMs * 1.05 + 50;
    const n = ++this.barrierSeq;
    const waited = new AbortController();
    let waiting: Set<string> | undefined;
    try {
      // Each relay counts as live for its own lease (relays may have been given different ones).
      const live = await store.db
        .selectFrom("relays")
        .select(["id", "lease_ms"])
        .where("id", "<>", relayId)
        .where((eb) => eb("seen_at", ">", sql<number>`${databaseNowMs} - (${eb.ref("lease_ms")} * 11 / 10) - 1000`))
        .execute();
      this.longestLeaseMs = Math.max(this.options.leaseMs, ...live.map((r) => r.lease_ms));
      if (live.length === 0) return;
      waiting = new Set(live.map((r) => r.id));
      const answered = new Promise<void>((resolve) => this.barriers.set(n, { waiting: waiting!, resolve }));
      await sql`SELECT pg_notify(${CHANGES}, ${`barrier:${relayId}:${n}:${this.mac.tag("barrier", relayId, String(n))}`})`.execute(store.db);
      const until = deadline(Math.max(...live.map((r) => r.lease_ms)));
      await Promise.race([answered, sleep(Math.max(0, until - performance.now()), undefined, { signal: waited.signal }).catch(() => undefined)]);
    } catch {
      // Unknown which relays heard of the change: past the longest lease every one that did not is refusing.
      await sleep(Math.max(0, deadline(this.longestLeaseMs) - performance.now()));
    } finally {
      waited.abort();
      this.barriers.delete(n);
    }
    if (waiting && waiting.size > 0) log.warn("relays did not confirm a change in time; they have stopped serving from memory by now", { relays: [...waiting] });
  }

  /** Writes where this relay answers (once its listeners are up) for the others to read now. */
  async announce(): Promise<void> {
    const { url, linkAddress } = this.options.describe();
    await this.options.store.db.updateTable("relays").set({ url, link_address: linkAddress }).where("id", "=", this.options.relayId).execute();
  }

  /** The addresses agents dial of the relays running on the database (this one's included), oldest relay first. */
  async linkAddresses(): Promise<string[]> {
    const running = await this.options.store.db
      .selectFrom("relays")
      .select("link_address")
      .where("link_address", "is not", null)
      .where("seen_at", ">", sql<number>`${databaseNowMs} - ${GONE_AFTER_MS}`)
      .orderBy("started_at")
      .execute();
    return running.map((r) => r.link_address!);
  }

  /** Stops pinging, takes this relay off the `relays` table (writers no longer wait for it) and disconnects. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    for (const t of this.timers) clearInterval(t);
    clearTimeout(this.reconnect);
    // Nothing more is served from memory once writers stop waiting for this relay; a ping on its way would
    // put the row back, so it lands first.
    this.options.directory.dropLease();
    await this.pinging;
    await this.options.store.db
      .deleteFrom("relays")
      .where("id", "=", this.options.relayId)
      .execute()
      .catch(() => undefined);
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => undefined);
  }

  private async connect(first = false): Promise<void> {
    if (this.stopped) return;
    const { url, directory, log } = this.options;
    const pg = (await import("pg")).default;
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000, application_name: "makina relay changes", keepAlive: true, query_timeout: 10_000 });
    client.on("error", () => undefined);
    const generation = ++this.generation;
    client.on("notification", (m) => this.received(generation, m.channel, m.payload ?? ""));
    try {
      await client.connect();
      const { rows } = await client.query<{ shared: boolean }>(`SELECT pg_try_advisory_lock_shared(${ONE_RELAY_LOCK}) AS shared`);
      if (!rows[0]?.shared) throw new OlderRelayRunningError();
      await client.query(`LISTEN ${CHANGES}; LISTEN "${this.ownChannel}"`);
    } catch (err) {
      await client.end().catch(() => undefined);
      if (err instanceof OlderRelayRunningError && !first) log.error(err.message);
      throw err;
    }
    if (this.stopped) return void client.end().catch(() => undefined);
    this.client = client;
    client.once("end", () => {
      if (this.client === client) this.client = undefined;
      if (this.stopped) return;
      directory.markMissed();
      log.warn("lost the connection to the database's change feed; this relay refuses requests once its lease runs out, until it has caught up");
      this.scheduleReconnect();
    });
    // Whatever was committed while nobody listened (before the first connection too): everything is loaded
    // again, after what is queued; pings renew the lease, and barriers are confirmed, only once it succeeded.
    await this.catchUp(generation);
  }

  /** Loads everything whole for this connection, trying again every second until it can or the connection ends. */
  private async catchUp(generation: number): Promise<void> {
    const { directory, hooks, log } = this.options;
    while (!this.stopped && generation === this.generation && this.client) {
      if (await directory.reloadWhole()) {
        if (generation !== this.generation) return;
        this.loadedGeneration = generation;
        if (generation > 1) {
          log.info("the change feed is back; the gateway's directory was loaded whole again");
          await hooks.caughtUp().catch((err: unknown) => log.warn("could not look at the machines again after catching up", { error: String(err) }));
        }
        return;
      }
      await sleep(1000);
    }
  }

  private scheduleReconnect(): void {
    clearTimeout(this.reconnect);
    if (this.stopped) return;
    this.reconnect = setTimeout(() => {
      this.connect().catch(() => this.scheduleReconnect());
    }, 500);
    this.reconnect.unref();
  }

  /** Records that this relay is alive and notifies itself, through the database; the echo renews the lease. */
  private ping(): void {
    const client = this.client;
    // A relay that may have missed a change (a whole load pending or failing) neither renews its lease nor says
    // it is alive: writers stop waiting for it once its lease has run out, instead of at every write.
    if (!client || this.stopped || this.loadedGeneration !== this.generation || !this.options.directory.current) return;
    const { relayId, describe, leaseMs } = this.options;
    const n = ++this.pingSeq;
    this.pingsSent.set(n, performance.now());
    // Pings that never came back (a connection lost) are forgotten.
    for (const k of this.pingsSent.keys()) if (k < n - 100) this.pingsSent.delete(k);
    const { url, linkAddress } = describe();
    this.pinging = client
      .query(
        `WITH seen AS (
           INSERT INTO relays (id, url, link_address, started_at, seen_at, lease_ms) VALUES ($1, $2, $3, $4, (extract(epoch from clock_timestamp()) * 1000)::bigint, $7)
           ON CONFLICT (id) DO UPDATE SET seen_at = EXCLUDED.seen_at, url = EXCLUDED.url, link_address = EXCLUDED.link_address, lease_ms = EXCLUDED.lease_ms
           RETURNING 1
         ) SELECT pg_notify($5, $6) FROM seen`,
        [relayId, url, linkAddress, this.startedAt, this.ownChannel, `ping:${n}:${this.mac.tag("ping", relayId, String(n))}`, leaseMs],
      )
      // A connection that no longer answers is ended: its "end" connects again.
      .catch(() => void client.end().catch(() => undefined));
  }

  private received(generation: number, channel: string, payload: string): void {
    const { directory, relayId, hooks, leaseMs } = this.options;
    const colon = payload.indexOf(":");
    const kind = payload.slice(0, colon);
    const rest = payload.slice(colon + 1);
    if (channel === CHANGES) {
      const change = toChange(kind, rest);
      if (change) {
        if (change.kind === "machine") void directory.afterQueued(() => hooks.machineChanged(change.machineId));
        else void directory.follow(change);
        if (change.kind === "user") void directory.afterQueued(() => hooks.userChanged(change.userId));
      } else if (kind === "barrier") {
        const [writer = "", n = "", tag] = rest.split(":");
        if (!this.mac.holds(tag, "barrier", writer, n)) return this.drop("barrier");
        // Answered once every change before it is applied; not when one could not be read (the writer then
        // waits until this relay's lease has run out).
        if (writer !== relayId) void directory.afterQueued((current) => (current && generation === this.loadedGeneration && generation === this.generation ? this.ack(writer, n) : undefined));
      }
      return;
    }
    if (kind === "ping") {
      const [seq = "", tag] = rest.split(":");
      if (!this.mac.holds(tag, "ping", relayId, seq)) return this.drop("ping");
      const n = Number(seq);
      const sentAt = this.pingsSent.get(n);
      this.pingsSent.delete(n);
      if (sentAt === undefined) return;
      void directory.afterQueued((current) => {
        if (!current || generation !== this.generation || generation !== this.loadedGeneration) return;
        directory.holdLeaseUntil(sentAt + leaseMs);
        this.leaseResolve?.();
        this.leaseResolve = undefined;
      });
    } else if (kind === "ack") {
      const [from = "", n = "", tag] = rest.split(":");
      if (!this.mac.holds(tag, "ack", from, relayId, n)) return this.drop("acknowledgement");
      const barrier = this.barriers.get(Number(n));
      if (!barrier) return;
      barrier.waiting.delete(from);
      if (barrier.waiting.size === 0) barrier.resolve();
    }
  }

  private async ack(writer: string, n: string): Promise<void> {
    const { relayId } = this.options;
    await this.client?.query("SELECT pg_notify($1, $2)", [`makina_relay_${writer}`, `ack:${relayId}:${n}:${this.mac.tag("ack", relayId, writer, n)}`]).catch(() => undefined);
  }

  /** A barrier, acknowledgement or ping whose tag does not hold: not a relay's; dropped, and said once a minute. */
  private drop(what: string): void {
    this.forged.warn(what, this.options.log, `dropped a change-feed ${what} not tagged by a relay of this database (another client of the database sent it)`);
  }

  /** Machines online through relays gone are marked offline; relays gone for an hour are forgotten. */
  private async sweep(): Promise<void> {
    const { store, hooks, leaseMs, log } = this.options;
    try {
      const offline = await store.machines.markOfflineWhereRelayGone(Math.max(GONE_AFTER_MS, leaseMs * 3));
      if (offline.length > 0) hooks.machinesOffline(offline);
      await store.db.deleteFrom("relays").where("seen_at", "<", sql<number>`${databaseNowMs} - 3600000`).execute();
    } catch (err) {
      log.debug("could not look for relays gone", { error: String(err) });
    }
  }
}

function toChange(kind: string, id: string): StoreChange | undefined {
  switch (kind) {
    case "key":
      return { kind, keyId: id };
    case "org":
      return { kind, orgId: id };
    case "stacks":
      return { kind, orgId: id };
    case "machine":
      return { kind, machineId: id };
    case "setting":
      return { kind, key: id };
    case "user":
      return { kind, userId: id };
    default:
      return undefined;
  }
}
