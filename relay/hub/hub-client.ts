import { KeptAnswers, MakinaError, MinuteQuota } from "../../proto/index.js";
import { readGgufFiles, readHubRepo, REPO_ID, type HubFile, type HubRepo } from "./hub-repos.js";

/** Options of {@link HubClient}. */
export interface HubClientOptions {
  /** The hub (the operator's `--hf-endpoint`: Hugging Face, a mirror, an offline hub). */
  endpoint: string;
  /** A token for gated and private repositories, sent to the hub only; never logged or shown. */
  token?: () => string | undefined;
  /** How long one call may take. @default 8000 */
  timeoutMs?: number;
  /** How long an answer is reused. @default 300000 */
  keepMs?: number;
  /** Calls to the hub an organization may start a minute (answers reused are free). @default 30 */
  callsPerMinute?: number;
  /** Answers kept, the least recently asked forgotten first. @default 500 */
  maxKept?: number;
  fetch?: typeof fetch;
  now?: () => number;
}

/** The largest answer read from the hub (a search of 30 repositories, a repository's file list). */
const MAX_ANSWER_BYTES = 4 * 1024 * 1024;
/** Repositories a search answers. */
const SEARCH_LIMIT = 30;

/**
 * The hub's API, read by the relay for the Forge's search: repositories by text (`/api/models?search=`), and one
 * repository's GGUF files with their sizes (`/api/models/{id}?blobs=true`). Answers are kept a while and shared by
 * every organization; calls that reach the hub are bounded per organization a minute (a refusal: 429
 * `rate_limit_requests`). The hub's answers are shape-checked; what it fails to answer is 502 `hub_unavailable`.
 */
export class HubClient {
  private readonly kept: KeptAnswers<unknown>;
  /** Calls that reached the hub, per organization, this minute. */
  private readonly calls: MinuteQuota;
  private readonly o: Required<Omit<HubClientOptions, "token">> & Pick<HubClientOptions, "token">;

  constructor(options: HubClientOptions) {
    this.o = { timeoutMs: 8000, keepMs: 300_000, callsPerMinute: 30, maxKept: 500, fetch: globalThis.fetch, now: Date.now, ...options, endpoint: options.endpoint.replace(/\/+$/, "") };
    this.kept = new KeptAnswers(this.o.maxKept);
    this.calls = new MinuteQuota(this.o.callsPerMinute);
  }

  /** Repositories whose name matches `text`, most downloaded first. */
  async search(orgId: string, text: string, signal?: AbortSignal): Promise<HubRepo[]> {
    const query = new URLSearchParams({ search: text, limit: String(SEARCH_LIMIT), sort: "downloads", direction: "-1" });
    const answer = await this.get(orgId, `/api/models?${query.toString()}`, signal);
    if (!Array.isArray(answer)) throw unavailable("its search answer is not a list");
    return answer.flatMap((entry) => readHubRepo(entry) ?? []);
  }

  /** One repository and its GGUF files (404 `not_found` when the hub has no such repository). */
  async repo(orgId: string, id: string, signal?: AbortSignal): Promise<{ repo: HubRepo; files: HubFile[] }> {
    if (!REPO_ID.test(id)) throw new MakinaError("invalid_value", `'${id.slice(0, 200)}' is not a repository: give owner/name.`, { param: "repo" });
    const answer = await this.get(orgId, `/api/models/${id}?blobs=true`, signal);
    const repo = readHubRepo(answer);
    if (!repo) throw unavailable("its answer for the repository is not one");
    return { repo, files: readGgufFiles(answer) };
  }

  private async get(orgId: string, path: string, signal?: AbortSignal): Promise<unknown> {
    const now = this.o.now();
    const kept = this.kept.get(path, now);
    if (kept !== undefined) return kept;
    if (!this.calls.take(orgId, now)) {
      throw new MakinaError("rate_limit_requests", `This organization asked the model hub ${this.o.callsPerMinute} times this minute: try again in a minute (searches already made are answered at once).`, { retryAfterMs: 60_000 - (now % 60_000) });
    }
    const token = this.o.token?.();
    let res: Response;
    try {
      res = await this.o.fetch(`${this.o.endpoint}${path}`, {
        headers: { accept: "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
        redirect: "follow",
        signal: signal ? AbortSignal.any([signal, AbortSignal.timeout(this.o.timeoutMs)]) : AbortSignal.timeout(this.o.timeoutMs),
      });
    } catch (err) {
      throw unavailable(`it could not be reached (${err instanceof Error ? err.message : String(err)})`, err);
    }
    if (res.status === 404 || res.status === 401) {
      throw new MakinaError("not_found", res.status === 404 ? "The hub has no such repository." : "The hub has no such repository, or it is private and the relay's hub token cannot read it.", { param: "repo" });
    }
    if (!res.ok) throw unavailable(`it answered HTTP ${res.status}`);
    const value = await readJson(res);
    this.kept.set(path, value, now + this.o.keepMs);
    return value;
  }
}

/** The answer's JSON, read up to {@link MAX_ANSWER_BYTES}. */
async function readJson(res: Response): Promise<unknown> {
  const reader = res.body?.getReader();
  if (!reader) throw unavailable("it answered nothing");
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.length;
    if (size > MAX_ANSWER_BYTES) {
      await reader.cancel();
      throw unavailable("its answer is larger than 4 MiB");
    }
    chunks.push(value);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString("utf8")) as unknown;
  } catch (err) {
    throw unavailable("its answer is not JSON", err);
  }
}

function unavailable(why: string, cause?: unknown): MakinaError {
  return new MakinaError("hub_unavailable", `The model hub cannot be searched just now: ${why}.`, { retryAfterMs: 5000, cause });
}
