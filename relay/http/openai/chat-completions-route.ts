import type { Request, RequestHandler, Response } from "express";
import { MakinaError, RUNTIME_CAPABILITIES, type Logger, type TokenEvent } from "../../../proto/index.js";
import type { AgentRegistry } from "../../link/index.js";
import { pickTarget, stacksForKey } from "../../routing/index.js";
import { estimateTokens, type RateLimiter } from "../../limits/index.js";
import { randomBase62, type ApiKeyRecord, type Store } from "../../store/index.js";
import type { RelayMetrics } from "../../metrics/index.js";
import type { UsageRecorder } from "../../usage/index.js";
import { validateChatRequest, type ChatRequest } from "./validate-chat-request.js";
import { SseWriter } from "./sse-writer.js";

/** Dependencies and limits of the chat-completions endpoint. */
export interface ChatCompletionsDeps {
  store: Store;
  registry: AgentRegistry;
  log: Logger;
  /** No first token within this many ms → 503 `runtime_unavailable`. */
  firstTokenTimeoutMs: number;
  /** A non-streamed request is abandoned after this many ms. */
  requestTimeoutMs: number;
  limiter: RateLimiter;
  /** Completion tokens assumed for the token-limit estimate when `max_tokens` is absent. */
  defaultCompletionEstimate: number;
  /** Counts requests and tokens per key and model for the usage page. */
  usage: UsageRecorder;
  metrics: RelayMetrics;
}

/** `POST /v1/chat/completions`, streamed and not. */
export function chatCompletions(deps: ChatCompletionsDeps): RequestHandler {
  return async (req, res, next) => {
    const log = deps.log.child({ requestId: res.locals.requestId });
    // The client going away cancels the generation on the machine.
    const controller = new AbortController();
    const onClose = () => {
      if (!res.writableFinished) controller.abort(new MakinaError("canceled", "The client closed the connection."));
    };
    res.on("close", onClose);
    try {
      const key = res.locals.apiKey as ApiKeyRecord;
      const request = validateChatRequest(req.body);
      res.locals.model = request.model;
      const allowed = stacksForKey(deps.store, key, request.model);
      const capable = allowed.filter((st) => request.needs.every((p) => RUNTIME_CAPABILITIES[st.runtime].includes(p)));
      if (capable.length === 0) {
        const param = request.needs.find((p) => !RUNTIME_CAPABILITIES[allowed[0]!.runtime].includes(p))!;
        throw new MakinaError("unsupported_parameter", `The parameter '${param}' with this value is not supported by the ${allowed[0]!.runtime} runtime serving \`${request.model}\`.`, { param });
      }
      const { stack, session } = pickTarget(deps.registry, capable);
      if (request.maxTokens !== null && stack.contextSize !== null && request.maxTokens > stack.contextSize) {
        throw new MakinaError(
          "context_length_exceeded",
          `This model's maximum context length is ${stack.contextSize} tokens, but max_tokens is ${request.maxTokens}.`,
          { param: "max_tokens" },
        );
      }
      // Admission comes after every check that can refuse the request, so a refused request consumes nothing.
      const admission = deps.limiter.admit(key, estimateTokens(request.messages, request.maxTokens, deps.defaultCompletionEstimate));
      res.set(deps.limiter.headers(key));
      log.info("chat completion", { model: request.model, stackId: stack.id, machineId: stack.machineId, stream: request.stream });
      try {
        const events = session.infer(
          stack.id,
          {
            messages: request.messages,
            temperature: request.temperature,
            topP: request.topP,
            maxTokens: request.maxTokens ?? 0,
            stop: request.stop,
            seed: request.seed,
            presencePenalty: request.presencePenalty,
            frequencyPenalty: request.frequencyPenalty,
            stream: request.stream,
          },
          {
            signal: controller.signal,
            firstTokenTimeoutMs: deps.firstTokenTimeoutMs,
            onUsage: (u) => {
              admission.settle(u ? u.promptTokens + u.completionTokens : null);
              deps.usage.record({ orgId: key.orgId, keyId: key.id, model: request.model, promptTokens: u?.promptTokens ?? 0, completionTokens: u?.completionTokens ?? 0, failed: u === null });
              if (u) deps.metrics.usage(request.model, u.promptTokens, u.completionTokens);
            },
          },
        );
        const meta = { id: `chatcmpl-${randomBase62(29)}`, created: Math.floor(Date.now() / 1000), model: request.model };
        if (request.stream) await stream(req, res, events, meta, request, log);
        else await complete(res, events, meta, controller, deps.requestTimeoutMs);
      } catch (err) {
        // Not served (refused by the runtime, machine gone before the first byte): give the quota back.
        // A client that went away keeps paying for the tokens generated until then.
        const code = MakinaError.from(err).code;
        if (!res.headersSent && code !== "canceled" && code !== "timeout") admission.refund();
        throw err;
      }
    } catch (err) {
      next(err);
    } finally {
      res.off("close", onClose);
    }
  };
}

interface Meta {
  id: string;
  created: number;
  model: string;
}

async function complete(res: Response, events: AsyncGenerator<TokenEvent>, meta: Meta, controller: AbortController, timeoutMs: number): Promise<void> {
  const timer = setTimeout(() => controller.abort(new MakinaError("timeout", "The request took too long to complete.")), timeoutMs);
  try {
    let content = "";
    for await (const ev of events) {
      if (ev.type === "text") {
        content += ev.text;
        continue;
      }
      res.json({
        id: meta.id,
        object: "chat.completion",
        created: meta.created,
        model: meta.model,
        choices: [{ index: 0, message: { role: "assistant", content, refusal: null }, logprobs: null, finish_reason: ev.finishReason }],
        usage: { prompt_tokens: ev.usage.promptTokens, completion_tokens: ev.usage.completionTokens, total_tokens: ev.usage.promptTokens + ev.usage.completionTokens },
      });
    }
  } finally {
    clearTimeout(timer);
  }
}

async function stream(_req: Request, res: Response, events: AsyncGenerator<TokenEvent>, meta: Meta, request: ChatRequest, log: Logger): Promise<void> {
  // Wait for the machine's first event before committing to 200, so that errors
  // known up front (context too long, runtime not ready) get their real status.
  const first = await events.next();
  res.locals.firstTokenAt = performance.now();
  const sse = new SseWriter(res);
  sse.open();
  const chunk = (delta: Record<string, unknown>, finishReason: string | null) => ({
    id: meta.id,
    object: "chat.completion.chunk",
    created: meta.created,
    model: meta.model,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
  });
  try {
    if (!(await sse.send(chunk({ role: "assistant", content: "" }, null)))) return;
    let ev: IteratorResult<TokenEvent> = first;
    while (!ev.done) {
      const value = ev.value;
      if (value.type === "text") {
        if (value.text !== "" && !(await sse.send(chunk({ content: value.text }, null)))) return;
      } else {
        if (!(await sse.send(chunk({}, value.finishReason)))) return;
        if (request.includeUsage) {
          const usage = { prompt_tokens: value.usage.promptTokens, completion_tokens: value.usage.completionTokens, total_tokens: value.usage.promptTokens + value.usage.completionTokens };
          if (!(await sse.send({ id: meta.id, object: "chat.completion.chunk", created: meta.created, model: meta.model, choices: [], usage }))) return;
        }
        await sse.send("[DONE]");
        sse.end();
        return;
      }
      ev = await events.next();
    }
  } catch (err) {
    const e = MakinaError.from(err);
    if (e.code === "canceled") return;
    log.warn("stream failed after the first byte", { err: e, cause: e.cause });
    // A truncated stream must never look like a success: an error event and no [DONE].
    await sse.send({ error: { message: `The stream ended before completion: ${e.message}`, type: "server_error", param: null, code: "stream_incomplete" } });
    sse.end();
  } finally {
    await events.return(undefined);
  }
}
