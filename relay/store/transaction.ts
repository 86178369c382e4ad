import type { Transaction } from "kysely";
import type { Db } from "./open-database.js";
import type { Tables } from "./tables.js";

/**
 * Runs `work` in a transaction, committed when it succeeds and rolled back when it throws, and throws the
 * error of the work itself. (A write SQLite refuses with SQLITE_FULL has already ended the transaction, so
 * a ROLLBACK then fails too; Kysely's own `transaction()` would throw that second, meaningless error.)
 */
export async function transaction<T>(db: Db, work: (trx: Transaction<Tables>) => Promise<T>): Promise<T> {
  const trx = await db.startTransaction().execute();
  let result: T;
  try {
    result = await work(trx);
  } catch (err) {
    await trx.rollback().execute().catch(() => undefined);
    throw err;
  }
  await trx.commit().execute();
  return result;
}
