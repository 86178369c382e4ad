import type { Client } from "pg";
import type { Logger } from "../../proto/index.js";

/** The advisory lock a relay holds on its PostgreSQL database while it runs. An arbitrary fixed 64-bit key. */
const RELAY_LOCK = "7247031196208271002";

/** How the lock's connection is named in `pg_stat_activity`. */
export const LOCK_APPLICATION = "makina relay lock";

/** How long after losing the lock's connection (PostgreSQL restarted) the relay takes it again. */
const RETAKE_MS = 1000;

/** How often the relay checks that the lock's connection still answers. */
const PROBE_MS = 5000;

/** Refusal when another relay holds the database. */
export class DatabaseInUseError extends Error {
  constructor() {
    super(
      "Another relay is running on this PostgreSQL database. Several relays on one database are not supported yet " +
        "(a key revoked through one would still be served by the other until it restarts): stop the other relay, " +
        "or give this one a database of its own.",
    );
    this.name = "DatabaseInUseError";
  }
}

/** A held database lock. */
export interface DatabaseLock {
  release(): Promise<void>;
}

/**
 * One relay per PostgreSQL database, for now: what the data directory's lock does for a SQLite file. The
 * gateway serves keys and routes from memory and applies the changes its own relay writes; a second relay on
 * the same database would not hear of them, and would serve a revoked key. So the relay holds a
 * session-level advisory lock on a connection of its own, and a second one refuses to start.
 *
 * When that connection drops (PostgreSQL restarted), the lock is taken again once the database answers; the
 * gateway keeps serving from memory meanwhile. Should another relay have started in between, this one logs
 * the conflict as an error on every attempt. Both ends watch the connection: the relay sends a probe every
 * 5 s, and PostgreSQL's TCP keepalives (10 s idle, then 3 probes 5 s apart) let go of the lock of a relay whose
 * machine died or was cut off, so a replacement can start within half a minute.
 */
export async function lockDatabase(url: string, log?: Logger): Promise<DatabaseLock> {
  let client = await take(url);
  let released = false;
  let retry: NodeJS.Timeout | undefined;

  const probe = setInterval(() => {
    // A connection that no longer answers is ended: its "end" takes the lock again.
    client.query("SELECT 1").catch(() => void client.end().catch(() => undefined));
  }, PROBE_MS);
  probe.unref();
  const watch = (c: Client) => {
    c.once("end", () => {
      if (released) return;
      log?.warn("lost the connection that holds this relay's lock on the database; taking it again");
      schedule();
    });
  };
  const schedule = () => {
    retry = setTimeout(() => {
      take(url).then(
        (c) => {
          if (released) return void c.end().catch(() => undefined);
          client = c;
          watch(c);
          log?.info("this relay's lock on the database is held again");
        },
        (err: unknown) => {
          if (released) return;
          if (err instanceof DatabaseInUseError) log?.error(err.message);
          schedule();
        },
      );
    }, RETAKE_MS);
    retry.unref();
  };
  watch(client);
  return {
    release: async () => {
      released = true;
      clearTimeout(retry);
      clearInterval(probe);
      await client.end().catch(() => undefined);
    },
  };
}

async function take(url: string): Promise<Client> {
  // Loaded here, not at the top: only a relay on PostgreSQL needs the client.
  const pg = (await import("pg")).default;
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000, application_name: LOCK_APPLICATION, keepAlive: true, query_timeout: 10_000 });
  client.on("error", () => undefined);
  try {
    await client.connect();
    await client.query("SET tcp_keepalives_idle = 10; SET tcp_keepalives_interval = 5; SET tcp_keepalives_count = 3");
    const { rows } = await client.query<{ held: boolean }>(`SELECT pg_try_advisory_lock(${RELAY_LOCK}) AS held`);
    if (!rows[0]?.held) throw new DatabaseInUseError();
    return client;
  } catch (err) {
    await client.end().catch(() => undefined);
    throw err;
  }
}
