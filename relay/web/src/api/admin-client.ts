import type { SessionInfo } from "./types.js";

/** An error answer of the relay, in its documented envelope. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string | null,
    readonly param: string | null,
    message: string,
  ) {
    super(message);
  }
}

/**
 * The web application's way into the relay: the session cookie goes with every
 * call (same origin), and state-changing calls carry the session's CSRF token.
 */
export class AdminClient {
  private csrfToken = "";
  /** Called when the relay says the session is gone (signed out elsewhere, expired). */
  onSignedOut: () => void = () => {};

  async session(): Promise<SessionInfo | null> {
    try {
      const s = await this.request<SessionInfo>("GET", "/auth/v1/session");
      this.csrfToken = s.csrf_token;
      return s;
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) return null;
      throw err;
    }
  }

  async signIn(login: string, password: string): Promise<SessionInfo> {
    const s = await this.request<SessionInfo>("POST", "/auth/v1/sign-in", { login, password });
    this.csrfToken = s.csrf_token;
    return s;
  }

  async signOut(): Promise<void> {
    await this.request("POST", "/auth/v1/sign-out");
    this.csrfToken = "";
  }

  changePassword(current: string, next: string): Promise<unknown> {
    return this.request("POST", "/auth/v1/password", { current_password: current, new_password: next });
  }

  get<T>(path: string): Promise<T> {
    return this.request<T>("GET", `/admin/v1${path}`);
  }

  post<T>(path: string, body?: unknown): Promise<T> {
    return this.request<T>("POST", `/admin/v1${path}`, body);
  }

  patch<T>(path: string, body: unknown): Promise<T> {
    return this.request<T>("PATCH", `/admin/v1${path}`, body);
  }

  private async request<T>(method: string, path: string, body?: unknown): Promise<T> {
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
      const e = (json as { error?: { message?: string; code?: string; param?: string | null } } | null)?.error;
      const err = new ApiError(res.status, e?.code ?? null, e?.param ?? null, e?.message ?? `The relay answered ${res.status}.`);
      if (res.status === 401 && !path.startsWith("/auth/v1/sign-in")) this.onSignedOut();
      throw err;
    }
    return json as T;
  }
}
