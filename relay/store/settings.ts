import type { Db } from "./open-database.js";

/** Small key-value settings of the relay (for example the admin token's hash). */
export class SettingsStore {
  constructor(private readonly db: Db) {}

  async get(key: string): Promise<string | undefined> {
    return (await this.db.selectFrom("settings").select("value").where("key", "=", key).executeTakeFirst())?.value;
  }

  async set(key: string, value: string): Promise<void> {
    await this.db
      .insertInto("settings")
      .values({ key, value })
      .onConflict((oc) => oc.column("key").doUpdateSet({ value }))
      .execute();
  }
}
