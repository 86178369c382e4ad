import type { Db } from "./open-database.js";
import type { ChangeNotices } from "./change-notices.js";

/** Small key-value settings of the relay (for example the admin token's hash). */
export class SettingsStore {
  constructor(
    private readonly db: Db,
    private readonly notices: ChangeNotices,
  ) {}

  async get(key: string): Promise<string | undefined> {
    return (await this.db.selectFrom("settings").select("value").where("key", "=", key).executeTakeFirst())?.value;
  }

  async set(key: string, value: string): Promise<void> {
    await this.db
      .insertInto("settings")
      .values({ key, value })
      .onConflict((oc) => oc.column("key").doUpdateSet({ value }))
      .execute();
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
}
