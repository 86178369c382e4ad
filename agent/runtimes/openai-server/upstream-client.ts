import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import { MakinaError, ServerSentEventParser } from "../../../proto/index.js";

/**
 * A pooled HTTP client for one model server: keep-alive connections reused
 * across requests (global fetch costs several times more per request), and
 * server-sent events read straight off the socket's text.
 */
export class UpstreamClient {
  private readonly agent: HttpAgent;
  private readonly url: URL;
  private readonly auth: Record<string, string>;

  /** `apiKey`: sent as a bearer token with every request (the per-start key of a server the agent runs). */
  constructor(
    baseUrl: string,
    apiKey?: string,
  ) {
    this.auth = apiKey ? { authorization: `Bearer ${apiKey}` } : {};
    this.url = new URL(baseUrl.endsWith("/") ? baseUrl : `${baseUrl}/`);
    this.agent = this.url.protocol === "https:" ? new HttpsAgent({ keepAlive: true, maxSockets: 256 }) : new HttpAgent({ keepAlive: true, maxSockets: 256 });
  }

  /** POSTs JSON to `path` (relative to the base URL); resolves with the response once its headers arrive. */
  post(path: string, body: string, signal?: AbortSignal): Promise<IncomingMessage> {
    const target = new URL(path, this.url);
    const send = target.protocol === "https:" ? httpsRequest : httpRequest;
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(MakinaError.from(signal.reason));
      const req = send(target, { method: "POST", agent: this.agent, headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body), ...this.auth } }, (res) => {
        signal?.removeEventListener("abort", onAbort);
        // Aborting now ends the body: the reader's loop sees the abort.
        if (signal) {
          const stop = () => res.destroy(MakinaError.from(signal.reason));
          signal.addEventListener("abort", stop, { once: true });
          res.once("close", () => signal.removeEventListener("abort", stop));
        }
        resolve(res);
      });
      const onAbort = () => req.destroy(MakinaError.from(signal?.reason));
      signal?.addEventListener("abort", onAbort, { once: true });
      req.once("error", (err) => {
        signal?.removeEventListener("abort", onAbort);
        reject(err);
      });
      req.end(body);
    });
  }

  /** Closes the pooled connections. */
  close(): void {
    this.agent.destroy();
  }
}

/** The whole body as text. */
export async function readText(res: IncomingMessage): Promise<string> {
  res.setEncoding("utf8");
  let text = "";
  for await (const chunk of res as AsyncIterable<string>) text += chunk;
  return text;
}

/** Server-sent events' `data:` payloads from a response body (events without data are skipped). */
export async function* sseData(res: IncomingMessage): AsyncGenerator<string> {
  res.setEncoding("utf8");
  const parser = new ServerSentEventParser();
  for await (const chunk of res as AsyncIterable<string>) for (const { data } of parser.push(chunk)) if (data) yield data;
}
