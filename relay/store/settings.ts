import type { Db } from "./open-database.js";
import type { ChangeNotices } from "./change-notices.js";
import { transaction } from "./transaction.js";

/** A setting's value replaced by another, provided it still holds the one read. */
export interface SettingSwap {
  key: string;
  from: string;
  to: string;
}

/** Small key-value settings of the relay (for example the admin token's hash). */
export class SettingsStore {
  constructor(
    private readonly db: Db,
    private readonly notices: ChangeNotices,
  ) {}

  async get(key: string): Promise<string | undefined> {
    return (await this.db.selectFrom("settings").select("value").where("key", "=", key).executeTakeFirst())?.value;
  }

  /** Every setting, by key. */
  async all(): Promise<Map<string, string>> {
    const rows = await this.db.selectFrom("settings").select(["key", "value"]).orderBy("key").execute();
    return new Map(rows.map((r) => [r.key, r.value]));
  }

  async set(key: string, value: string): Promise<void> {
    await this.db
      .insertInto("settings")
      .values({ key, value })
      .onConflict((oc) => oc.column("key").doUpdateSet({ value }))
      .execute();
    await this.notices.changed({ kind: "setting", key });
  }

  async delete(key: string): Promise<void> {
    await this.db.deleteFrom("settings").where("key", "=", key).execute();
    await this.notices.changed({ kind: "setting", key });
  }

  /** Sets `key` unless it is set already (two relays starting at once: one sets it); returns whether this call did. */
  async setIfAbsent(key: string, value: string): Promise<boolean> {
    const res = await this.db
      .insertInto("settings")
      .values({ key, value })
      .onConflict((oc) => oc.column("key").doNothing())
      .executeTakeFirst();
    const set = Number(res.numInsertedOrUpdatedRows ?? 0) === 1;
    if (set) await this.notices.changed({ kind: "setting", key });
    return set;
  }

  /**
   * Replaces each setting's value, all or none: when any of them no longer holds the value it was read with
   * (another relay or command changed it meanwhile), nothing is written and this returns false.
   */
  async swap(swaps: readonly SettingSwap[]): Promise<boolean> {
    const done = await transaction(this.db, async (trx) => {
      for (const { key, from, to } of swaps) {
        const res = await trx.updateTable("settings").set({ value: to }).where("key", "=", key).where("value", "=", from).executeTakeFirst();
        if (Number(res.numUpdatedRows) !== 1) throw new StaleSwap();
      }
      return true;
    }).catch((err: unknown) => {
      if (err instanceof StaleSwap) return false;
      throw err;
    });
    if (done) for (const { key } of swaps) await this.notices.changed({ kind: "setting", key });
    return done;
  }
}

class StaleSwap extends Error {}
