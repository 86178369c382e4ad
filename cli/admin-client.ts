import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { CliError, EXIT } from "./cli-error.js";

/** Where the admin API is and how to authenticate to it. */
export interface AdminTarget {
  url: string;
  token: string;
}

/** Finds the relay: `--relay`/`--admin-token`, else `MAKINA_RELAY_URL`/`MAKINA_ADMIN_TOKEN`, else the relay's `--data-dir`. */
export function resolveAdminTarget(flags: { relay?: string; adminToken?: string; dataDir?: string }, env: NodeJS.ProcessEnv): AdminTarget {
  let url = flags.relay ?? env.MAKINA_RELAY_URL;
  let token = flags.adminToken ?? env.MAKINA_ADMIN_TOKEN;
  const dataDir = resolve(flags.dataDir ?? env.MAKINA_DATA_DIR ?? ".makina");
  if (!url && existsSync(join(dataDir, "relay.json"))) url = (JSON.parse(readFileSync(join(dataDir, "relay.json"), "utf8")) as { url: string }).url;
  if (!token && existsSync(join(dataDir, "admin-token"))) token = readFileSync(join(dataDir, "admin-token"), "utf8").trim();
  if (!url || !token) {
    throw new CliError(
      `Cannot find the relay${url ? "'s admin token" : ""}: pass --relay URL and --admin-token TOKEN, set MAKINA_RELAY_URL and MAKINA_ADMIN_TOKEN, or run on the relay's host with --data-dir DIR (looked in ${dataDir}).`,
      EXIT.usage,
    );
  }
  return { url: url.replace(/\/+$/, ""), token };
}

/** Calls the admin API; an error answer becomes a CliError carrying the relay's message. */
export async function adminRequest<T>(target: AdminTarget, method: "GET" | "POST", path: string, body?: unknown): Promise<T> {
  let res: Response;
  try {
    res = await fetch(`${target.url}/admin/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${target.token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      body: body === undefined ? undefined : JSON.stringify(body),
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
    const message = (data as { error?: { message?: string } }).error?.message ?? `HTTP ${res.status}`;
    throw new CliError(`${message} (HTTP ${res.status})`);
  }
  return data as T;
}
