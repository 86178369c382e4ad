import type { Db } from "./open-database.js";

/** Small key-value settings of the relay (for example the admin token's hash). */
export class SettingsStore {
  constructor(private readonly db: Db) {}

  get(key: string): string | undefined {
    return (this.db.prepare("SELECT value FROM settings WHERE key = ?").get(key) as { value: string } | undefined)?.value;
  }

  set(key: string, value: string): void {
    this.db.prepare("INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value").run(key, value);
  }
}
