import { setTimeout as sleep } from "node:timers/promises";
import type { RuntimeAdapter } from "../../agent/runtimes/runtime-adapter.js";
import { stoppedBy, type ChatInput, type ChatOptions, type ModelRuntime, type RuntimeEvent } from "../../agent/runtimes/model-runtime.js";
import { isErrorCode, MakinaError } from "../../proto/index.js";

/**
 * A stand-in for a model, for tests of routing, errors and flow control that need no llama.cpp: it answers
 * with the words of the last user message, one word per chunk (a word is a token here), up to `max_tokens`
 * (then `length`). The last user message may instead hold one directive:
 * - `fail <code>`: the runtime fails with that error code (any string: unknown codes too);
 * - `hang`: no answer until the request is canceled;
 * - `slow <ms> <words…>`: waits that long before each word;
 * - `stall <words…>`: sends the words, then nothing more until the request is canceled.
 * Usage counts the words of every message as the prompt and each word sent as a completion token. An embeddings
 * request gets the vector [characters, words] of each input; a rerank request a score per document, the share of
 * the query's words it has (the query read with each document: its words and the document's are the tokens).
 */
export class FakeRuntime implements ModelRuntime {
  readonly endpoint = "fake:";
  /** Requests seen, in order: tests check where the router sent them. */
  readonly seen: ChatInput[] = [];
  /** The usage each request ended with (completed, failed or canceled), in the order they ended. */
  readonly usages: { promptTokens: number; completionTokens: number }[] = [];
  /** Requests being answered now. */
  active = 0;

  constructor(readonly contextSize = 0) {}

  async *chat(input: ChatInput, options: ChatOptions = {}): AsyncGenerator<RuntimeEvent> {
    const usage = { promptTokens: 0, completionTokens: 0 };
    this.active++;
    try {
      yield* this.answer(input, usage, options.signal);
    } catch (err) {
      // Canceled or failed midway: the stream ends with what it used, as a runtime's does.
      yield stoppedBy(err, usage, options.signal);
    } finally {
      this.active--;
      this.usages.push({ ...usage });
    }
  }

  private async *answer(input: ChatInput, usage: { promptTokens: number; completionTokens: number }, signal: AbortSignal | undefined): AsyncGenerator<RuntimeEvent> {
    this.seen.push(input);
    if (input.embed?.length) {
      yield* this.embed(input, usage);
      return;
    }
    if (input.rerank) {
      yield* this.rank(input, usage);
      return;
    }
    usage.promptTokens = input.messages.reduce((n, m) => n + words(m.content).length, 0);
    const last = [...input.messages].reverse().find((m) => m.role === "user")?.content ?? "";
    const [directive, ...rest] = words(last);
    if (directive === "fail") {
      const code = rest[0] ?? "internal_error";
      if (!isErrorCode(code)) throw new Error(`the fake model was told to fail with '${code}'`);
      throw new MakinaError(code, `The fake model failed with ${code} as told.`, { retryAfterMs: code === "runtime_unavailable" ? 2000 : undefined });
    }
    if (directive === "hang") {
      await new Promise((_, reject) => signal?.addEventListener("abort", () => reject(MakinaError.from(signal.reason)), { once: true }));
    }
    const delayMs = directive === "slow" ? Number(rest.shift()) : 0;
    const reply = directive === "slow" || directive === "stall" ? rest : words(last);
    const limit = input.maxTokens || Infinity;
    for (const [i, word] of reply.entries()) {
      if (i >= limit) break;
      if (delayMs) await sleep(delayMs, undefined, { signal });
      if (signal?.aborted) throw MakinaError.from(signal.reason);
      usage.completionTokens++;
      yield { type: "text", text: i === 0 ? word : ` ${word}` };
    }
    if (directive === "stall") {
      await new Promise((_, reject) => signal?.addEventListener("abort", () => reject(MakinaError.from(signal.reason)), { once: true }));
    }
    yield { type: "end", finishReason: reply.length > limit ? "length" : "stop", usage: { ...usage } };
  }

  /**
   * An embeddings request: each input's vector is [its characters, its words], and its words are its tokens. An input
   * that is a directive (`fail <code>`, `hang`) acts as a chat's does.
   */
  private async *embed(input: ChatInput, usage: { promptTokens: number; completionTokens: number }): AsyncGenerator<RuntimeEvent> {
    const texts = input.embed!.map((e) => e.text);
    failIfTold(texts[0] ?? "");
    usage.promptTokens = texts.reduce((n, t) => n + words(t).length, 0);
    for (const [index, text] of texts.entries()) yield { type: "embedding", index, values: [text.length, words(text).length] };
    yield { type: "end", finishReason: "stop", usage: { ...usage } };
  }

  /** A rerank request: a query that is a directive (`fail <code>`) acts as a chat's does. */
  private async *rank(input: ChatInput, usage: { promptTokens: number; completionTokens: number }): AsyncGenerator<RuntimeEvent> {
    const { query, documents } = input.rerank!;
    failIfTold(query);
    const asked = words(query);
    usage.promptTokens = documents.reduce((n, d) => n + asked.length + words(d).length, 0);
    for (const [index, d] of documents.entries()) yield { type: "score", index, score: asked.filter((w) => words(d).includes(w)).length / asked.length };
    yield { type: "end", finishReason: "stop", usage: { ...usage } };
  }

  async close(): Promise<void> {}
}

/** Throws the error `fail <code>` names. */
function failIfTold(text: string): void {
  const [directive, code] = words(text);
  if (directive !== "fail") return;
  if (!code || !isErrorCode(code)) throw new Error(`the fake model was told to fail with '${code}'`);
  throw new MakinaError(code, `The fake model failed with ${code} as told.`, { retryAfterMs: code === "runtime_unavailable" ? 2000 : undefined });
}

function words(text: string): string[] {
  return text.split(/\s+/).filter(Boolean);
}

/**
 * An adapter that serves every stack of its kind with a {@link FakeRuntime}; `runtimes` holds them by
 * model id, so a test can look at what each one was asked.
 */
export function fakeAdapter(kind: "openai" = "openai"): RuntimeAdapter & { runtimes: Map<string, FakeRuntime> } {
  const runtimes = new Map<string, FakeRuntime>();
  return {
    kind,
    requirements: { description: "any machine" },
    runtimes,
    async install() {
      return { version: "fake" };
    },
    async start(model) {
      const runtime = new FakeRuntime();
      runtimes.set(model.modelId, runtime);
      return runtime;
    },
  };
}
