import Database from "better-sqlite3";
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { MIGRATIONS } from "./migrations.js";

/** An open SQLite database of the relay. */
export type Db = Database.Database;

/**
 * Opens (creating when needed) the relay's SQLite file and brings its schema up
 * to date. WAL mode (readers never wait for a writer), foreign keys on, and a
 * short busy timeout: better-sqlite3 waits for a lock synchronously, so a long
 * wait would stall every request; a write that cannot get the lock in time
 * fails with a clear error instead (503 `storage_unavailable`), and the relay's
 * own writes are tried again later.
 */
export function openDatabase(file: string): Db {
  if (file !== ":memory:") mkdirSync(dirname(file), { recursive: true });
  const db = new Database(file);
  db.pragma("journal_mode = WAL");
  // In WAL mode, NORMAL syncs at checkpoints rather than at every commit: the database cannot be corrupted,
  // and a power cut may lose only the last moments of usage counts and last-use times.
  db.pragma("synchronous = NORMAL");
  db.pragma("foreign_keys = ON");
  db.pragma("busy_timeout = 200");
  migrate(db);
  return db;
}

function migrate(db: Db): void {
  const current = db.pragma("user_version", { simple: true }) as number;
  if (current > MIGRATIONS.length) {
    throw new Error(`The database schema (version ${current}) is newer than this Makina (version ${MIGRATIONS.length}); upgrade Makina.`);
  }
  for (let v = current; v < MIGRATIONS.length; v++) {
    db.transaction(() => {
      db.exec(MIGRATIONS[v]!);
      db.pragma(`user_version = ${v + 1}`);
    })();
  }
}
