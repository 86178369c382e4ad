import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { AdminCallArgs, AdminQuery, AdminResponse, AdminRoute, ErrorBody, ExportRoute } from "../relay/admin-contract/index.js";
import { CliError, EXIT } from "./cli-error.js";

/** Where the admin API is and how to authenticate to it. */
export interface AdminTarget {
  url: string;
  token: string;
}

/**
 * Finds the relay and its admin token: `--relay`/`--admin-token`/`--admin-token-file`, else
 * `MAKINA_RELAY_URL`/`MAKINA_ADMIN_TOKEN`, else the relay's data directory (`--data-dir`, `MAKINA_DATA_DIR`,
 * or `./.makina`). A token given by the caller is never sent to a URL read from a `./.makina` that merely
 * happens to be in the current directory: that directory must be named, or the URL given.
 */
export function resolveAdminTarget(
  flags: { relay?: string; adminToken?: string; adminTokenFile?: string; dataDir?: string },
  env: NodeJS.ProcessEnv,
  cwd = process.cwd(),
): AdminTarget {
  let url = flags.relay ?? env.MAKINA_RELAY_URL;
  let token = flags.adminToken ?? (flags.adminTokenFile ? readTokenFile(flags.adminTokenFile) : undefined) ?? env.MAKINA_ADMIN_TOKEN;
  const callerToken = token !== undefined;
  const namedDir = flags.dataDir ?? env.MAKINA_DATA_DIR;
  const dataDir = resolve(cwd, namedDir ?? ".makina");
  if (!url && existsSync(join(dataDir, "relay.json"))) {
    if (callerToken && namedDir === undefined) {
      throw new CliError(
        `Not sending the admin token to the relay named in ${join(dataDir, "relay.json")}, a file that happens to be in this directory: pass --relay URL, or --data-dir ${dataDir} if it is your relay's.`,
        EXIT.usage,
      );
    }
    // The admin API may have a listener of its own (admin_url); older relay.json files name only the url.
    const info = JSON.parse(readFileSync(join(dataDir, "relay.json"), "utf8")) as { url: string; admin_url?: string };
    url = info.admin_url ?? info.url;
  }
  if (!token && existsSync(join(dataDir, "admin-token"))) token = readFileSync(join(dataDir, "admin-token"), "utf8").trim();
  if (!url || !token) {
    throw new CliError(
      `Cannot find the relay${url ? "'s admin token" : ""}: pass --relay URL and --admin-token-file FILE (or --admin-token TOKEN), set MAKINA_RELAY_URL and MAKINA_ADMIN_TOKEN, or run on the relay's host with --data-dir DIR (looked in ${dataDir}).`,
      EXIT.usage,
    );
  }
  return { url: url.replace(/\/+$/, ""), token };
}

/** A token kept in a file (so it never shows in `ps`): its first line. */
function readTokenFile(path: string): string {
  try {
    const token = readFileSync(path, "utf8").split(/\r?\n/)[0]!.trim();
    if (!token) throw new CliError(`The token file ${path} is empty.`, EXIT.usage);
    return token;
  } catch (err) {
    if (err instanceof CliError) throw err;
    throw new CliError(`Cannot read the token file ${path}: ${(err as Error).message}`, EXIT.usage);
  }
}

/** What a call may carry besides its route. */
interface Parts {
  params?: Record<string, string>;
  query?: Record<string, string | number | boolean | null | undefined>;
  body?: unknown;
}

/** The URL of a route of the admin contract on the relay, its path parameters filled in and its query appended. */
export function routeUrl(target: AdminTarget, route: AdminRoute, parts: Parts = {}): { method: string; url: string } {
  const [method, template] = route.split(" ") as [string, string];
  const path = template.replace(/:(\w+)/g, (_, name: string) => encodeURIComponent(parts.params?.[name] ?? ""));
  const search = new URLSearchParams(Object.entries(parts.query ?? {}).flatMap(([k, v]): [string, string][] => (v === undefined || v === null ? [] : [[k, String(v)]]))).toString();
  return { method, url: `${target.url}${path}${search ? `?${search}` : ""}` };
}

/**
 * Calls a route of the admin contract (`adminCall(t, "GET /admin/v1/stacks/:id", { params: { id } })`) with the
 * admin token; resolves with its answer, typed by the contract. An error answer becomes a CliError carrying
 * the relay's message.
 */
export async function adminCall<K extends AdminRoute>(target: AdminTarget, route: K, ...args: AdminCallArgs<K>): Promise<AdminResponse<K>> {
  const parts = (args[0] ?? {}) as Parts;
  const { method, url } = routeUrl(target, route, parts);
  let res: Response;
  try {
    res = await fetch(url, {
      method,
      headers: { authorization: `Bearer ${target.token}`, ...(parts.body === undefined ? {} : { "content-type": "application/json" }) },
      body: parts.body === undefined ? undefined : JSON.stringify(parts.body),
    });
  } catch (err) {
    throw new CliError(`Cannot reach the relay at ${target.url}: ${(err as Error).cause instanceof Error ? ((err as Error).cause as Error).message : (err as Error).message}`);
  }
  const text = await res.text();
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    throw new CliError(`The relay answered ${res.status} with a body that is not JSON.`);
  }
  if (!res.ok) {
    const message = (data as Partial<ErrorBody>).error?.message ?? `HTTP ${res.status}`;
    throw new CliError(`${message} (HTTP ${res.status})`);
  }
  return data as AdminResponse<K>;
}

/**
 * Writes what an export route (CSV) answers to `out` as it arrives (an export of 100,000 rows is never held in
 * memory); a refusal is a {@link CliError} with the relay's words, before anything is written.
 */
export async function adminExport<K extends ExportRoute>(target: AdminTarget, route: K, query: AdminQuery<K>, out: NodeJS.WritableStream): Promise<void> {
  const { method, url } = routeUrl(target, route, { query } as Parts);
  let res: Response;
  try {
    res = await fetch(url, { method, headers: { authorization: `Bearer ${target.token}` } });
  } catch (err) {
    throw new CliError(`Cannot reach the relay at ${target.url}: ${(err as Error).cause instanceof Error ? ((err as Error).cause as Error).message : (err as Error).message}`);
  }
  if (!res.ok || !res.body) {
    const text = await res.text();
    let message = `HTTP ${res.status}`;
    try {
      message = (JSON.parse(text) as Partial<ErrorBody>).error?.message ?? message;
    } catch {
      // Not the API's error shape: its status says enough.
    }
    throw new CliError(`${message} (HTTP ${res.status})`);
  }
  await pipeline(Readable.fromWeb(res.body as import("node:stream/web").ReadableStream), out, { end: false });
}
