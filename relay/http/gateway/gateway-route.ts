import type { IncomingMessage, ServerResponse } from "node:http";
import { MAX_EMBED_INPUTS, MAX_RERANK_DOCUMENTS, MakinaError, type Logger, type TokenEvent, type ToolCall } from "../../../proto/index.js";
import { admitApiKey, identifyApiKey } from "../../keys/index.js";
import { LimitRefusal, type Admission, type BudgetAsk, type Limiter, type RefusalBudget } from "../../limits/index.js";
import type { RelayMetrics } from "../../metrics/index.js";
import { PooledBase62 } from "../../ids/index.js";
import { planRequest, type AdmissionGate, type Admitted, type GatewayDirectory, type InferenceTarget, type PlannableRequest } from "../../routing/index.js";
import type { RequestLog, UsageRecorder } from "../../usage/index.js";
import { RequestLedger } from "../../ledger/index.js";
import { MODEL_ID } from "../../admin-contract/index.js";
import { readJsonBody } from "../read-json-body.js";
import { requestIdFor } from "../request-id.js";
import { sendJson } from "../send-json.js";
import type { AnswerMeta, CollectedAnswer, GatewayCodec, StreamEncoder } from "./gateway-codec.js";
import type { RequestsInFlight } from "./requests-in-flight.js";
import { SseWriter } from "./sse-writer.js";
import { budgetAsk, holdToGrant } from "./budget-ask.js";

/** Dependencies and limits of the gateway's routes. */
export interface GatewayDeps {
  /** Keys and routes, refreshed for every request. */
  directory: GatewayDirectory;
  /** Where a machine's requests go: its link on this relay, or the relay that holds it. */
  registry: { get(machineId: string): InferenceTarget | undefined };
  log: Logger;
  /** Largest accepted request body, in bytes. */
  bodyLimitBytes: number;
  /** No first token within this many ms → 503 `runtime_unavailable`. */
  firstTokenTimeoutMs: number;
  /** An on-demand stack's first token may come this much later: its model loads first. */
  loadTimeoutMs: number;
  /** A `flex` request's first token may come this much later: it may wait that long for the machine's context sequence. */
  flexQueueTimeoutMs: number;
  /** A non-streamed request is abandoned after this many ms. */
  requestTimeoutMs: number;
  limiter: Limiter;
  /** Refused requests of limited keys, counted apart from their quota: a key that sends only refusals is slowed. */
  refusals: RefusalBudget;
  /** Completion tokens assumed for the token-limit estimate when `max_tokens` is absent. */
  defaultCompletionEstimate: number;
  /** Counts requests: which of equally good replicas takes the next one. */
  turn: () => number;
  /** Counts requests and tokens per key and model for the usage page. */
  usage: UsageRecorder;
  /** Every request of a known key, answered or refused, for the request log. */
  requests: RequestLog;
  metrics: RelayMetrics;
  /** Requests in flight per stack and machine, with a bounded queue beyond. */
  gate: AdmissionGate;
  /** Requests in flight (or waiting their turn), ended together when the relay's drain period is over. */
  inFlight: RequestsInFlight;
}

/**
 * The key's admission, or its refusal with the `x-ratelimit-*` headers of the count that refused it (replacing
 * those read before its body came: other requests, on this relay or another, may have been counted since).
 */
function admitWithHeaders(limiter: Limiter, key: Parameters<Limiter["admit"]>[0], estimate: number, budget: BudgetAsk | undefined, res: ServerResponse, limits: LimitsSeen): Admission | Promise<Admission> {
  // From here on the answer has the headers of the count that admitted or refused it.
  limits.told = true;
  try {
    const admitted = limiter.admit(key, estimate, budget);
    return admitted instanceof Promise ? admitted.catch((err: unknown) => refusedWith(res, err, limits)) : admitted;
  } catch (err) {
    return refusedWith(res, err, limits);
  }
}

/** Rethrows a refusal of the limits after setting the headers of the count that refused it. */
function refusedWith(res: ServerResponse, err: unknown, limits: LimitsSeen): never {
  if (err instanceof LimitRefusal) setHeaders(res, err.headers);
  // Refused for another reason (Redis away under --redis-fail closed): its headers are read at the refusal.
  else limits.told = false;
  throw err;
}

/** The place of a request whose machine's relay applies its admission. */
const ADMITTED_ELSEWHERE: Admitted = { release: () => undefined };

/**
 * One API's inference endpoint (`POST /v1/chat/completions`, `/v1/embeddings`, `/v1/responses`, `/v1/messages`,
 * `/v1/messages/count_tokens`, `/v1/rerank`), streamed and
 * not, as a plain Node handler: the gateway's one path for every API, with the API's codec at its edges. It
 * does its own request id, key check, body reading and error envelope (the same helpers the Express side
 * uses) rather than pass through Express's router and body parser. What the request comes to (its key, its
 * plan, its admission, its tokens, its status) is told to its {@link RequestLedger}, which settles the limits,
 * usage, metrics and request log from it.
 */
export function gatewayRoute<R extends PlannableRequest>(deps: GatewayDeps, codec: GatewayCodec<R>): (req: IncomingMessage, res: ServerResponse) => void {
  const ids = new PooledBase62();
  return (req, res) => {
    const ledger = new RequestLedger(deps, requestIdFor(req, res), undefined, codec.api);
    res.once("close", () => ledger.closed(res));
    const limits: LimitsSeen = { key: undefined, told: false };
    serve(deps, codec, ids, req, res, ledger, limits).catch(async (err: unknown) => {
      // A limited key's refusal before its admission told its limits carries them too, read now (off the way of
      // the requests that are served: their admission's headers are the count that admitted them).
      if (limits.key && !limits.told && !res.headersSent) {
        try {
          const headers = deps.limiter.headers(limits.key);
          setHeaders(res, headers instanceof Promise ? await headers : headers);
        } catch {
          // Limits unreadable: the refusal goes out without them.
        }
      }
      ledger.refused(codec.sendError(res, err, deps.log, ledger.requestId), res.statusCode);
    });
  };
}

/** Whether a request's answer has its key's `x-ratelimit-*` / `x-budget-*` headers yet, and the key. */
interface LimitsSeen {
  key: Parameters<Limiter["headers"]>[0] | undefined;
  told: boolean;
}

async function serve<R extends PlannableRequest>(deps: GatewayDeps, codec: GatewayCodec<R>, ids: PooledBase62, req: IncomingMessage, res: ServerResponse, ledger: RequestLedger, limits: LimitsSeen): Promise<void> {
  const reload = deps.directory.refresh();
  if (reload) await reload;
  // A key refused for what it is (expired, revoked in the last 30 days, its maker disabled) is known from here on:
  // its refusals are logged as its own, for its admin to see who still uses it (60 a minute at most, as any key's).
  const named = identifyApiKey(deps.directory, codec.authorization(req));
  ledger.keyKnown(named.record);
  const key = admitApiKey(deps.directory, named);
  // Every response to a limited key carries its x-ratelimit-* (and x-budget-*) headers: its admission's, or, for
  // a refusal before it, read then.
  limits.key = key;
  // A key past its budget of refused requests is turned away before its body is read.
  deps.refusals.check(key);
  const body = await readJsonBody(req, deps.bodyLimitBytes);
  ledger.asked(askedModel(body), typeof body === "object" && body !== null && (body as { stream?: unknown }).stream === true);
  const request = codec.decode(body);
  // Where it runs, or why it cannot: a router stack may send it on to another model, which then answers, and
  // the response (and the usage) name that model.
  const { model, stack, session, steps, estimatedTokens, captureHours, tier } = planRequest(deps, request, key);
  // Metrics name only models that exist: a model id the client made up is not a series of its own.
  ledger.planned({ model, stackId: stack.id, machineId: stack.machineId, metered: codec.metered !== false, serviceTier: tier });
  // Its tier and its key's turn go with it: the queues on the way (this relay's, the machine's relay's, the
  // runtime's) take it in that order. The key's id, never its secret.
  request.input.serviceTier = tier;
  request.input.fairShareKey = key.id;
  // Admission comes after every check that can refuse the request, so a refused request consumes nothing.
  // A budgeted key's request reserves its prompt and the completion it may make, and is held to what it got.
  const metered = codec.metered !== false;
  const budget = metered && key.budgets?.length ? budgetAsk(request.input, stack.contextSize, steps, estimatedTokens) : undefined;
  const admission = await admitWithHeaders(deps.limiter, key, metered ? estimatedTokens : 0, budget, res, limits);
  ledger.admitted(admission);
  setHeaders(res, admission.headers);
  if (budget) holdToGrant(request.input, admission, steps, stack.contextSize);
  const { stream: streamed } = request.input;
  // The client going away cancels the generation on the machine.
  const controller = new AbortController();
  const onClose = () => {
    if (!res.writableFinished) controller.abort(new MakinaError("canceled", "The client closed the connection."));
  };
  res.on("close", onClose);
  deps.inFlight.add(controller);
  let place: Admitted | undefined;
  try {
    // The stack and its machine run so many requests at once; beyond that the request waits its turn, briefly.
    // (A machine linked to another relay waits its turn there, where its requests in flight are counted.)
    place = session.admittedWhereLinked ? ADMITTED_ELSEWHERE : (deps.gate.tryEnter(stack.id, stack.machineId, tier === "flex") ?? (await deps.gate.wait(stack.id, stack.machineId, controller.signal, { tier, owner: key.id })));
    const events = session.infer(
      stack.id,
      request.input,
      {
        signal: controller.signal,
        // The answer's first token comes after the steps before the last (and an on-demand stack's load, or the
        // restart of a stack deployed again).
        // (and a `flex` request's wait for a sequence on the machine, as long as its wait in a queue here may be).
        firstTokenTimeoutMs: deps.firstTokenTimeoutMs * steps + (stack.residency === "on_demand" || stack.state === "deploying" ? deps.loadTimeoutMs : 0) + (tier === "flex" ? deps.flexQueueTimeoutMs : 0),
        steps,
        onUsage: (counted) => ledger.counted(counted),
      },
    );
    const meta: AnswerMeta = { id: codec.answerId(ids), created: Math.floor(Date.now() / 1000), model, serviceTier: tier };
    // A stack that captures keeps what was asked (cut to its size) and, as it comes, what was answered: of a chat
    // (embeddings, rerank and token counts have no conversation to keep, and are logged without their inputs).
    if (captureHours !== null && !request.input.embed?.length && !request.input.rerank && !request.input.countOnly) ledger.capturing(request.input.messages, Date.now() + captureHours * 3_600_000);
    const encoder = streamed ? codec.streamEncoder(request, meta) : undefined;
    // A request sent to a model not loaded waits for its load: for how long, from the machine's word that it is ready.
    const cold = session.loaded?.(stack.id) === false ? performance.now() : undefined;
    // The request leaves for its machine with the first pull; its log line is written while the machine works.
    const first = events.next();
    // Awaited by `stream` or `complete` below; a rejection before then is theirs to handle, never unhandled.
    first.catch(() => undefined);
    if (cold !== undefined) {
      first.then(() => {
        const readyAt = session.readySince?.(stack.id);
        if (readyAt !== undefined && readyAt >= cold) ledger.waitedForLoad(Math.round(readyAt - cold));
      }, () => undefined);
    }
    // From its first pull the token stream is the runtime's: it reports the usage, whatever happens next.
    ledger.started();
    deps.log.info(codec.label, { requestId: ledger.requestId, model, stackId: stack.id, machineId: stack.machineId, stream: streamed });
    if (encoder) await stream(res, first, events, encoder, ledger, deps.log);
    // (A `flex` request may wait that much longer for a sequence on the machine, as its first token may.)
    else await complete(res, first, events, (answer) => codec.answer(request, meta, answer), controller, deps.requestTimeoutMs + (tier === "flex" ? deps.flexQueueTimeoutMs : 0), ledger);
  } catch (err) {
    // Not served (refused by the runtime, machine gone before the first byte, or never its turn): the ledger
    // gives the quota back, unless the machine may have worked on it.
    ledger.notServed(MakinaError.from(err).code, res.headersSent, place !== undefined, deps.inFlight.endedByRelay(controller));
    throw inClientTerms(err, request);
  } finally {
    place?.release();
    res.off("close", onClose);
    deps.inFlight.delete(controller);
  }
}

/**
 * A refusal of the machine's (its runtime's, its layers'), which names the parameter at fault in the domain's
 * terms (`messages`, `response_format`), naming the client's field instead (`input`, `text.format`): the name
 * the request's decoder gave it. Its text is the machine's, and says no parameter's name of one API only.
 */
function inClientTerms(err: unknown, request: PlannableRequest): unknown {
  if (!(err instanceof MakinaError) || err.param === null) return err;
  const param = request.paramName(err.param);
  return param === err.param ? err : new MakinaError(err.code, err.message, { param, retryAfterMs: err.retryAfterMs, cause: err.cause });
}

/**
 * The `model` of a request body when it is a model id as stacks have them (for the log of a request refused
 * before it was checked); empty otherwise: no stack could serve it, and its text may be anything.
 */
function askedModel(body: unknown): string {
  const model = body !== null && typeof body === "object" ? (body as { model?: unknown }).model : undefined;
  return typeof model === "string" && MODEL_ID.test(model) ? model : "";
}

function setHeaders(res: ServerResponse, headers: Record<string, string>): void {
  for (const name in headers) res.setHeader(name, headers[name]!);
}

/**
 * Gathers a whole answer (the request not streamed), within the request's time, and answers it in one body.
 * `first` is the first pull of `events`, already made.
 */
async function complete(res: ServerResponse, first: Promise<IteratorResult<TokenEvent>>, events: AsyncGenerator<TokenEvent>, render: (answer: CollectedAnswer) => unknown, controller: AbortController, timeoutMs: number, ledger: RequestLedger): Promise<void> {
  const timer = setTimeout(() => controller.abort(new MakinaError("timeout", "The request took too long to complete.")), timeoutMs);
  try {
    let text = "";
    const calls: ToolCall[] = [];
    const vectors: number[][] = [];
    const scores: number[] = [];
    for (let next = await first; !next.done; next = await events.next()) {
      const ev = next.value;
      if (ev.type === "text") {
        text += ev.text;
        continue;
      }
      if (ev.type === "toolCall") {
        const call = (calls[ev.index] ??= { id: ev.id, name: ev.name, arguments: "" });
        call.arguments += ev.arguments;
        continue;
      }
      if (ev.type === "embedding") {
        // An index the machine makes up is not an array's length: only the inputs' places are kept.
        if (Number.isInteger(ev.index) && ev.index >= 0 && ev.index < MAX_EMBED_INPUTS) vectors[ev.index] = ev.values;
        continue;
      }
      if (ev.type === "score") {
        if (Number.isInteger(ev.index) && ev.index >= 0 && ev.index < MAX_RERANK_DOCUMENTS && Number.isFinite(ev.score)) scores[ev.index] = ev.score;
        continue;
      }
      ledger.firstToken();
      const made = calls.filter(Boolean);
      ledger.answerText(text);
      made.forEach((c, i) => ledger.answerToolCall(c.name, c.arguments, i));
      sendJson(res, 200, render({ text, calls: made, vectors, scores, finishReason: ev.finishReason, usage: ev.usage }));
    }
  } finally {
    clearTimeout(timer);
    // Left early (an error or the timeout): the token stream is closed, which cancels the request on the machine.
    await events.return(undefined);
  }
}

/**
 * Streams an answer as the codec's server-sent events, as the machine's events come, with backpressure. It
 * waits for the machine's first event before committing to 200, so that errors known up front (context too
 * long, runtime not ready) get their real status; a stream that breaks after that ends with the codec's
 * failure frames, never its success marker. `first` is the first pull of `events`, already made.
 */
async function stream(res: ServerResponse, firstPull: Promise<IteratorResult<TokenEvent>>, events: AsyncGenerator<TokenEvent>, encoder: StreamEncoder, ledger: RequestLedger, log: Logger): Promise<void> {
  const first = await firstPull;
  ledger.firstToken();
  const sse = new SseWriter(res);
  sse.open();
  try {
    if (!(await sse.write(encoder.open()))) return;
    let ev: IteratorResult<TokenEvent> = first;
    while (!ev.done) {
      const value = ev.value;
      let frames: string;
      if (value.type === "text") {
        ledger.answerText(value.text);
        frames = encoder.text(value.text);
      } else if (value.type === "toolCall") {
        ledger.answerToolCall(value.name, value.arguments, value.index);
        frames = encoder.toolCall(value);
      } else if (value.type === "embedding" || value.type === "score") {
        // Embeddings and scores are never streamed: a machine that sends one here has nothing to add to a chat's stream.
        frames = "";
      } else {
        await sse.write(encoder.end(value.finishReason, value.usage));
        sse.end();
        return;
      }
      if (frames !== "" && !(await sse.write(frames))) return;
      ev = await events.next();
    }
  } catch (err) {
    const e = MakinaError.from(err);
    ledger.broke(e.code === "canceled" ? "canceled" : "stream_incomplete");
    if (e.code === "canceled") return;
    log.warn("stream failed after the first byte", { requestId: ledger.requestId, err: e, cause: e.cause });
    // A truncated stream must never look like a success.
    await sse.write(encoder.failure(new MakinaError("stream_incomplete", `The stream ended before completion: ${e.message}`)));
    sse.end();
  } finally {
    await events.return(undefined);
  }
}
