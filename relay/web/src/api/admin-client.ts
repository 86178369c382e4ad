import type { AdminCallArgs, AdminQuery, AdminResponse, AdminRoute, ExportRoute } from "../../../admin-contract/index.js";
import type { ErrorBody, SessionInfo } from "./types.js";
import { errorText } from "./error-text.js";

/** An error answer of the relay, in its documented envelope; `message` in the page's words (see {@link errorText}). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string | null,
    readonly param: string | null,
    /** What the relay said, as it said it. */
    readonly relayMessage: string,
  ) {
    super(errorText(code, param, relayMessage));
  }
}

/** What a call may carry besides its route: its path parameters, query and JSON body. */
interface Parts {
  params?: Record<string, string>;
  query?: Record<string, string | number | boolean | null | undefined>;
  body?: unknown;
}

/**
 * The web application's way into the relay, one typed call per route of the admin contract
 * (`client.call("GET /admin/v1/machines/:id", { params: { id } })`): the session cookie goes with every
 * call (same origin), and state-changing calls carry the session's CSRF token.
 */
export class AdminClient {
  private csrfToken = "";
  /** Called when the relay says the session is gone (signed out elsewhere, expired). */
  onSignedOut: () => void = () => {};

  /** Calls a route of the contract; resolves with its answer, rejects with an {@link ApiError}. */
  call<K extends AdminRoute>(route: K, ...args: AdminCallArgs<K>): Promise<AdminResponse<K>> {
    const { params = {}, query = {}, body } = (args[0] ?? {}) as Parts;
    const [method, template] = route.split(" ") as [string, string];
    const path = template.replace(/:(\w+)/g, (_, name: string) => encodeURIComponent(params[name] ?? ""));
    const search = new URLSearchParams(Object.entries(query).flatMap(([k, v]): [string, string][] => (v === undefined || v === null ? [] : [[k, String(v)]]))).toString();
    return this.request(method, search ? `${path}?${search}` : path, body) as Promise<AdminResponse<K>>;
  }

  /** Where the browser downloads an export (CSV) of route `K` with `query`: a link, followed with the session cookie. */
  exportUrl<K extends ExportRoute>(route: K, query: AdminQuery<K>): string {
    const path = route.split(" ")[1]!;
    const search = new URLSearchParams(Object.entries(query ?? {}).flatMap(([k, v]): [string, string][] => (v === undefined || v === null ? [] : [[k, String(v)]]))).toString();
    return search ? `${path}?${search}` : path;
  }

  async session(): Promise<SessionInfo | null> {
    try {
      const s = await this.call("GET /auth/v1/session");
      this.csrfToken = s.csrf_token;
      return s;
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) return null;
      throw err;
    }
  }

  async signIn(login: string, password: string): Promise<SessionInfo> {
    const s = await this.call("POST /auth/v1/sign-in", { body: { login, password } });
    this.csrfToken = s.csrf_token;
    return s;
  }

  async signOut(): Promise<void> {
    await this.call("POST /auth/v1/sign-out");
    this.csrfToken = "";
  }

  changePassword(current: string, next: string): Promise<unknown> {
    return this.call("POST /auth/v1/password", { body: { current_password: current, new_password: next } });
  }

  private async request(method: string, path: string, body?: unknown): Promise<unknown> {
    const headers: Record<string, string> = { accept: "application/json" };
    if (body !== undefined) headers["content-type"] = "application/json";
    if (method !== "GET") headers["x-csrf-token"] = this.csrfToken;
    let res: Response;
    try {
      res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: "same-origin" });
    } catch {
      throw new ApiError(0, "network_error", null, "The relay cannot be reached. Check that it is running, then try again.");
    }
    const text = await res.text();
    let json: unknown = null;
    try {
      json = text ? JSON.parse(text) : null;
    } catch {
      json = null;
    }
    if (!res.ok) {
      const e = (json as Partial<ErrorBody> | null)?.error;
      const err = new ApiError(res.status, e?.code ?? null, e?.param ?? null, e?.message ?? `The relay answered ${res.status}.`);
      // A 401 that names a field (a wrong current password) refuses what was typed; the session is still good. The
      // first look for a session answers 401 to anyone not signed in yet: nothing ended.
      if (res.status === 401 && !err.param && !path.startsWith("/auth/v1/sign-in") && path !== "/auth/v1/session") this.onSignedOut();
      throw err;
    }
    return json;
  }
}
