import type { Transaction } from "kysely";
import type { Db } from "./open-database.js";
import type { Tables } from "./tables.js";

/**
 * Runs `work` in a transaction (with `isolation`, its reads all of one moment), committed when it succeeds and rolled back when it (or the commit) throws, and
 * throws the error of the work itself. (A write SQLite refuses with SQLITE_FULL has already ended the transaction, so
 * a ROLLBACK then fails too; Kysely's own `transaction()` would throw that second, meaningless error.)
 */
export async function transaction<T>(db: Db, work: (trx: Transaction<Tables>) => Promise<T>, options: { isolation?: "repeatable read" } = {}): Promise<T> {
  // SQLite's transactions see one snapshot from their first read on whatever is asked; PostgreSQL's do when told.
  const trx = await (options.isolation ? db.startTransaction().setIsolationLevel(options.isolation) : db.startTransaction()).execute();
  let result: T;
  try {
    result = await work(trx);
  } catch (err) {
    await trx.rollback().execute().catch(() => undefined);
    throw err;
  }
  try {
    await trx.commit().execute();
  } catch (err) {
    // A COMMIT refused (a full disk often fails here, writing the journal) still holds the connection: the
    // rollback gives it back (and PostgreSQL's pool drops it if it broke), or every later query would wait.
    await trx.rollback().execute().catch(() => undefined);
    throw err;
  }
  return result;
}
