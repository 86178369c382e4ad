import Sqlite from "better-sqlite3";
import type { Client, Pool, types as PgTypes } from "pg";
import { chmodSync, existsSync, mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { Kysely, PostgresDialect, SqliteDialect, sql } from "kysely";
import { MIGRATIONS, migrationSql } from "./migrations.js";
import type { Tables } from "./tables.js";

/**
 * The relay's database through Kysely, a typed query builder with a dialect per database. Decided over
 * hand-written SQL: the relay runs on SQLite (one process, nothing to install) and on PostgreSQL (several
 * relays), and with a builder every query is written once, its columns and results are checked by the
 * compiler against {@link Tables}, and the dialect writes the placeholders (`?` or `$1`), quoting and
 * `RETURNING` each database wants. Kysely has no runtime dependencies, drives the same better-sqlite3
 * the relay already used, and stays close to SQL (no ORM, no hidden queries).
 */
export type Db = Kysely<Tables>;

/** PostgreSQL's clock in ms since the epoch: the one clock every relay on a database compares times by. */
export const databaseNowMs = sql<number>`(extract(epoch from clock_timestamp()) * 1000)::bigint`;

/** Where the relay keeps its state: a SQLite file, or a PostgreSQL database shared by several relays. */
export type DatabaseLocation = { kind: "sqlite"; file: string } | { kind: "postgres"; url: string };

/** An open, migrated database. */
export interface Database {
  readonly db: Db;
  readonly dialect: DatabaseLocation["kind"];
  /** How many migrations this call applied (0 when another relay had already, or the schema was current). */
  readonly migrated: number;
  /**
   * SQLite only: a number that changes whenever another connection (another process) committed to the file,
   * read without waiting (`PRAGMA data_version`). Undefined on PostgreSQL, where changes are announced.
   */
  readonly externalVersion?: () => number;
  /**
   * SQLite only: runs `text` (an insert of one row) once per row of `rows`, in one transaction, its statement
   * prepared once and kept: thousands of rows a second (the request log) at the database's own cost. False,
   * having written nothing, while a transaction of the query builder is open on the connection (the rows would
   * join it): the caller writes them through the builder instead.
   */
  readonly appendRows?: (text: string, rows: readonly unknown[][]) => boolean;
  close(): Promise<void>;
}

/** Opens the database and brings its schema up to date. */
export async function openDatabase(location: DatabaseLocation, options: { poolSize?: number } = {}): Promise<Database> {
  return location.kind === "sqlite" ? openSqlite(location.file) : openPostgres(location.url, options.poolSize ?? 10);
}

/**
 * SQLite: WAL mode (readers never wait for a writer), foreign keys on, and a short busy timeout:
 * better-sqlite3 waits for a lock synchronously, so a long wait would stall every request; a write that
 * cannot get the lock in time fails with a clear error instead (503 `storage_unavailable`), and the relay's
 * own writes are tried again later. The file and its journal are readable by this user only.
 */
function openSqlite(file: string): Database {
  if (file !== ":memory:") mkdirSync(dirname(file), { recursive: true });
  const raw = new Sqlite(file);
  try {
    raw.pragma("journal_mode = WAL");
    // In WAL mode, NORMAL syncs at checkpoints rather than at every commit: the database cannot be corrupted,
    // and a power cut may lose only the last moments of usage counts and last-use times.
    raw.pragma("synchronous = NORMAL");
    raw.pragma("foreign_keys = ON");
    raw.pragma("busy_timeout = 200");
    // What PostgreSQL's migration defines too (see `migrations.ts`): text folded for a search in any case, and a
    // name's sort key with its numbers in order (`key-9` before `key-10`).
    raw.function("makina_fold", { deterministic: true }, (t: unknown) => (typeof t === "string" ? foldText(t) : t));
    raw.function("makina_natural", { deterministic: true }, (t: unknown) => (typeof t === "string" ? naturalKey(t) : t));
    const migrated = migrateSqlite(raw);
    // The database holds password and token hashes and usage: readable by this user only.
    if (file !== ":memory:") for (const suffix of ["", "-wal", "-shm"]) if (existsSync(file + suffix)) chmodSync(file + suffix, 0o600);
    const version = raw.prepare("PRAGMA data_version").pluck();
    const statements = new Map<string, Sqlite.Statement>();
    const append = raw.transaction((statement: Sqlite.Statement, rows: readonly unknown[][]) => {
      for (const row of rows) statement.run(row);
    });
    return {
      db: new Kysely<Tables>({ dialect: new SqliteDialect({ database: raw }) }),
      dialect: "sqlite",
      migrated,
      externalVersion: () => (raw.open ? (version.get() as number) : -1),
      appendRows: (text, rows) => {
        if (raw.inTransaction) return false;
        let statement = statements.get(text);
        if (!statement) statements.set(text, (statement = raw.prepare(text)));
        append(statement, rows);
        return true;
      },
      close: async () => {
        if (raw.open) raw.close();
      },
    };
  } catch (err) {
    raw.close();
    throw err;
  }
}

function migrateSqlite(raw: Sqlite.Database): number {
  const current = raw.pragma("user_version", { simple: true }) as number;
  tooNew(current);
  for (let v = current; v < MIGRATIONS.length; v++) {
    raw.transaction(() => {
      raw.exec(migrationSql(v, "sqlite"));
      raw.pragma(`user_version = ${v + 1}`);
    })();
  }
  return MIGRATIONS.length - Math.min(current, MIGRATIONS.length);
}

/** Text folded for a search in any case (Unicode's lower case). */
export function foldText(t: string): string {
  return t.toLowerCase();
}

/** Digits a number of a name is padded to in its sort key; a longer run sorts as it is. */
const NATURAL_DIGITS = 30;

/** A name's sort key: folded, each run of digits padded so that numbers sort as numbers. */
export function naturalKey(t: string): string {
  return foldText(t).replace(/[0-9]+/g, (d) => (d.length >= NATURAL_DIGITS ? d : d.padStart(NATURAL_DIGITS, "0")));
}

function tooNew(version: number): void {
  if (version > MIGRATIONS.length) {
    throw new Error(`The database schema (version ${version}) is newer than this Makina (version ${MIGRATIONS.length}); upgrade Makina.`);
  }
}

/**
 * PostgreSQL's BIGINT (times, counters) and NUMERIC (the sums of BIGINTs) arrive as strings by default, to
 * keep precision; the relay's never pass 2^53 (a time in ms, a count of tokens), so they are read as numbers.
 * Set per pool, not in pg's global table.
 */
const numbersFirst = (pgTypes: typeof PgTypes) => ({
  getTypeParser: ((oid: number, format?: "text" | "binary") =>
    oid === 20 || oid === 1700 ? (v: string) => Number(v) : pgTypes.getTypeParser(oid, format as "text")) as typeof PgTypes.getTypeParser,
});

/** The PostgreSQL client, loaded only by a relay given a PostgreSQL URL (it costs memory the SQLite relay does not need). */
async function loadPg(): Promise<{ Pool: typeof Pool; Client: typeof Client; types: ReturnType<typeof numbersFirst> }> {
  const pg = (await import("pg")).default;
  return { Pool: pg.Pool, Client: pg.Client, types: numbersFirst(pg.types) };
}

/** The advisory lock relays take to migrate: one at a time, and the others wait. An arbitrary fixed 64-bit key. */
const MIGRATION_LOCK = "7247031196208271001";

async function openPostgres(url: string, poolSize: number): Promise<Database> {
  const pg = await loadPg();
  const migrated = await migratePostgres(url, pg);
  // A statement that gets no answer in 30 s (a network path that dropped silently) fails rather than holding
  // its caller (the gateway's directory loads one at a time) until TCP gives up.
  const pool = new pg.Pool({ connectionString: url, max: poolSize, types: pg.types, connectionTimeoutMillis: 5000, idleTimeoutMillis: 30_000, query_timeout: 30_000, keepAlive: true });
  // A pooled connection that dies while idle (PostgreSQL restarted) is dropped and replaced on next use;
  // without a listener the pool's error would end the process.
  pool.on("error", () => undefined);
  // Nor one that dies while a query holds it (the query fails with the error, and the pool drops the connection
  // when it is given back): pg-pool listens for errors only on idle connections.
  pool.on("connect", (client) => client.on("error", () => undefined));
  return {
    db: new Kysely<Tables>({ dialect: new PostgresDialect({ pool }) }),
    dialect: "postgres",
    migrated,
    close: () => pool.end(),
  };
}

/**
 * Runs the missing migrations on one connection holding the advisory lock: when several relays start
 * against one empty database at once, exactly one migrates and the others wait for the lock, then find
 * the schema current. Each migration commits with its version, so one that fails leaves the database at
 * the last good version.
 */
async function migratePostgres(url: string, pg: Awaited<ReturnType<typeof loadPg>>): Promise<number> {
  const client = new pg.Client({ connectionString: url, types: pg.types, connectionTimeoutMillis: 10_000 });
  client.on("error", () => undefined);
  await client.connect();
  try {
    await client.query(`SELECT pg_advisory_lock(${MIGRATION_LOCK})`);
    await client.query("CREATE TABLE IF NOT EXISTS makina_schema (version INTEGER NOT NULL)");
    const rows = (await client.query<{ version: number }>("SELECT version FROM makina_schema")).rows;
    if (rows.length === 0) await client.query("INSERT INTO makina_schema (version) VALUES (0)");
    const current = rows[0]?.version ?? 0;
    tooNew(current);
    for (let v = current; v < MIGRATIONS.length; v++) {
      await client.query("BEGIN");
      try {
        // No parameters: the simple query protocol, which takes several statements at once.
        await client.query(migrationSql(v, "postgres"));
        await client.query(`UPDATE makina_schema SET version = ${v + 1}`);
        await client.query("COMMIT");
      } catch (err) {
        await client.query("ROLLBACK");
        throw err;
      }
    }
    return MIGRATIONS.length - Math.min(current, MIGRATIONS.length);
  } finally {
    await client.end().catch(() => undefined);
  }
}
