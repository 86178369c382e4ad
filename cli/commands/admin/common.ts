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

/** The multipliers a budget's tokens may end with: `500k`, `50M`, `2G`. */
const SCALES: Record<string, number> = { "": 1, k: 1e3, K: 1e3, m: 1e6, M: 1e6, g: 1e9, G: 1e9 };

/**
 * `--budget`: TOKENS/PERIOD (`100000/day`, `100k/day`, `50M/month`; period day, week or month, UTC), or none;
 * undefined when not given.
 */
export function budgetArg(v: string | undefined): { tokens: number; period: "day" | "week" | "month" } | null | undefined {
  if (v === undefined) return undefined;
  if (v === "none") return null;
  const m = /^(\d+(?:\.\d+)?)([kKmMgG]?)\/(day|week|month)$/.exec(v);
  const tokens = m ? Math.round(Number(m[1]) * SCALES[m[2]!]!) : 0;
  if (!m || tokens < 1) throw new CliError("--budget is TOKENS/PERIOD, such as 100000/day, 100k/day or 50M/month (period day, week or month, in UTC), or none.", EXIT.usage);
  return { tokens, period: m[3] as "day" | "week" | "month" };
}

/** A budget and what it has spent this period, as lists show it: `1,234 / 100,000 a day`; `none` without one. */
export function budgetText(b: { budget: { tokens: number; period: string } | null; budget_spent: number | null }): string {
  return b.budget ? `${(b.budget_spent ?? 0).toLocaleString("en-US")} / ${b.budget.tokens.toLocaleString("en-US")} a ${b.budget.period}` : "none";
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
