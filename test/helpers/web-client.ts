import { bodyText, serverSentEvents } from "../../proto/sse/index.js";

/**
 * A client of the relay's web endpoints the way a browser is one: it keeps the
 * session cookie it is given and sends the session's CSRF token on state-changing calls.
 */
export class WebClient {
  cookie = "";
  csrf = "";

  constructor(readonly origin: string) {}

  /** Signs in; resolves with the raw response (status, Set-Cookie) and keeps the session. */
  async signIn(login: string, password: string): Promise<Response> {
    const res = await fetch(`${this.origin}/auth/v1/sign-in`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ login, password }) });
    if (res.ok) {
      this.cookie = (res.headers.get("set-cookie") ?? "").split(";")[0]!;
      this.csrf = ((await res.clone().json()) as { csrf_token: string }).csrf_token;
    }
    return res;
  }

  /** Calls a path with the session cookie; non-GET calls carry the CSRF token unless `csrf` is false. */
  call(method: string, path: string, body?: unknown, options: { csrf?: boolean } = {}): Promise<Response> {
    const headers: Record<string, string> = { cookie: this.cookie };
    if (body !== undefined) headers["content-type"] = "application/json";
    if (method !== "GET" && options.csrf !== false) headers["x-csrf-token"] = this.csrf;
    return fetch(`${this.origin}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  }

  async json<T = Record<string, unknown>>(method: string, path: string, body?: unknown): Promise<T> {
    const res = await this.call(method, path, body);
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${path} answered ${res.status}: ${text}`);
    return JSON.parse(text) as T;
  }
}

/** Reads the relay's server-sent events from a streaming response, one `{event, data}` at a time, `data` parsed. */
export async function* sseEvents(res: Response): AsyncGenerator<{ event: string; data: Record<string, string> }> {
  for await (const { event, data } of serverSentEvents(bodyText(res.body!))) yield { event, data: JSON.parse(data) as Record<string, string> };
}
