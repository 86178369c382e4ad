import { existsSync } from "node:fs";
import { resolve } from "node:path";
import type { Argv } from "yargs";
import { resolveAdminTarget, type AdminTarget } from "../../admin-client.js";
import { CliError, EXIT } from "../../cli-error.js";

/** Options every `makina admin` command takes. */
export interface AdminArgs {
  json: boolean;
  relay?: string;
  adminToken?: string;
  adminTokenFile?: string;
  dataDir?: string;
}

export function adminOptions<T>(y: Argv<T>): Argv<T & AdminArgs> {
  return y
    .option("json", { type: "boolean", default: false, describe: "Print exactly one JSON document" })
    .option("relay", { type: "string", describe: "Relay URL (or MAKINA_RELAY_URL)" })
    .option("admin-token", { type: "string", describe: "Admin token (or MAKINA_ADMIN_TOKEN); it shows in `ps`: prefer --admin-token-file" })
    .option("admin-token-file", { type: "string", describe: "A file holding the admin token (its first line)" })
    .option("data-dir", { type: "string", describe: "The relay's data directory, when on its host" }) as Argv<T & AdminArgs>;
}

export function target(argv: AdminArgs): AdminTarget {
  return resolveAdminTarget(argv, process.env);
}

/** A model reference as the agent should see it: a relative path that exists here becomes absolute. */
export function normalizeModelRef(ref: string): string {
  if (/^(https?:\/\/|hf:)/i.test(ref)) return ref;
  return existsSync(ref) ? resolve(ref) : ref;
}

/** Milliseconds since the epoch as an ISO date, or "-". */
export const when = (ms: number | null | undefined) => (ms ? new Date(ms).toISOString() : "-");

/** `N` or `none` for a limit (none: the default, or no limit); undefined when not given. */
export function limitArg(name: string, v: string | undefined): number | null | undefined {
  if (v === undefined) return undefined;
  if (v === "none") return null;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new CliError(`--${name} is a positive integer, or none.`, EXIT.usage);
  return n;
}

/** Every item of a paged admin list (`{data, total, page, per_page}`), read a page of 1,000 at a time. */
export async function allPages<T>(read: (page: number, perPage: number) => Promise<{ data: T[]; total: number }>): Promise<T[]> {
  const all: T[] = [];
  // At most a million items; a relay that does not page (no `total`) answers everything at once.
  for (let page = 1; page <= 1000; page++) {
    const { data, total } = await read(page, 1000);
    all.push(...data);
    if (typeof total !== "number" || data.length < 1000 || all.length >= total) return all;
  }
  return all;
}
