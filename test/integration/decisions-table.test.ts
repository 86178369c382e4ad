import express from "express";
import type { AddressInfo } from "node:net";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createLogger } from "../../proto/index.js";
import { errorHandler } from "../../relay/http/error-handler.js";
import { startTestGateway, type TestGateway } from "../helpers/test-gateway.js";
import { OP } from "../helpers/operator.js";

/** One row of ../shared/spec/decisions.md's error table. */
interface Row {
  case: string;
  status: number;
  type: string;
  code: string;
  param?: string | null;
  /** The request, as raw fetch arguments relative to the relay. */
  request: (ctx: Ctx) => { path: string; init: RequestInit };
  /** The same request through the official client, where a client can make it. */
  client?: (ctx: Ctx) => Promise<unknown>;
  errorClass?: new (...args: never[]) => Error;
  headers?: (res: Response) => void;
  message?: string | RegExp;
}

interface Ctx {
  gw: TestGateway;
  key: string;
  keys: { restricted: string; rpm: string; tpm: string };
  offlineModel: string;
  loadingModel: string;
}

const json = (key: string | undefined, body: unknown, extra: Record<string, string> = {}): RequestInit => ({
  method: "POST",
  headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), "content-type": "application/json", ...extra },
  body: typeof body === "string" ? body : JSON.stringify(body),
});
const chat = (ctx: Ctx, body: Record<string, unknown>, key = ctx.key) => ({ path: "/v1/chat/completions", init: json(key, { model: ctx.gw.modelId, messages: [{ role: "user", content: "hi" }], max_tokens: 1, ...body }) });
const client = (ctx: Ctx, key = ctx.key) => new OpenAI({ baseURL: ctx.gw.baseURL, apiKey: key, maxRetries: 0 });
const sdkChat = (ctx: Ctx, body: Record<string, unknown>, key = ctx.key) =>
  client(ctx, key).chat.completions.create({ model: ctx.gw.modelId, messages: [{ role: "user", content: "hi" }], max_tokens: 1, ...body } as never);
const retryAfter = (res: Response) => {
  const s = Number(res.headers.get("retry-after"));
  expect(s).toBeGreaterThanOrEqual(1);
  expect(s).toBeLessThanOrEqual(60);
};

const ROWS: Row[] = [
  {
    case: "missing Authorization header",
    status: 401, type: "authentication_error", code: "missing_api_key", param: null,
    request: () => ({ path: "/v1/models", init: {} }),
    message: /Authorization: Bearer/,
  },
  {
    case: "unknown key", status: 401, type: "authentication_error", code: "invalid_api_key", param: null,
    request: () => ({ path: "/v1/models", init: { headers: { authorization: "Bearer mk_live_unknownunknownunknownunknown1234" } } }),
    client: (ctx) => new OpenAI({ baseURL: ctx.gw.baseURL, apiKey: "mk_live_unknownunknownunknownunknown1234", maxRetries: 0 }).models.list(),
    errorClass: OpenAI.AuthenticationError,
    message: /mk_live_…1234/,
  },
  {
    case: "malformed key", status: 401, type: "authentication_error", code: "invalid_api_key", param: null,
    request: () => ({ path: "/v1/models", init: { headers: { authorization: "Bearer not-a-key" } } }),
  },
  {
    case: "model excluded by the key's restriction", status: 403, type: "permission_error", code: "model_access_denied", param: "model",
    request: (ctx) => chat(ctx, {}, ctx.keys.restricted),
    client: (ctx) => sdkChat(ctx, {}, ctx.keys.restricted),
    errorClass: OpenAI.PermissionDeniedError,
  },
  {
    case: "model not deployed", status: 404, type: "invalid_request_error", code: "model_not_found", param: "model",
    request: (ctx) => chat(ctx, { model: "ghost" }),
    client: (ctx) => sdkChat(ctx, { model: "ghost" }),
    errorClass: OpenAI.NotFoundError,
    message: "The model `ghost` does not exist or is not deployed.",
  },
  {
    case: "requests per minute exceeded", status: 429, type: "requests", code: "rate_limit_exceeded", param: null,
    request: (ctx) => chat(ctx, {}, ctx.keys.rpm),
    client: (ctx) => sdkChat(ctx, {}, ctx.keys.rpm),
    errorClass: OpenAI.RateLimitError,
    headers: (res) => {
      retryAfter(res);
      expect(Number(res.headers.get("retry-after-ms"))).toBeGreaterThan(0);
      expect(res.headers.get("x-ratelimit-remaining-requests")).toBe("0");
    },
  },
  {
    case: "tokens per minute exceeded", status: 429, type: "tokens", code: "rate_limit_exceeded", param: null,
    request: (ctx) => chat(ctx, { max_tokens: 200 }, ctx.keys.tpm),
    client: (ctx) => sdkChat(ctx, { max_tokens: 200 }, ctx.keys.tpm),
    errorClass: OpenAI.RateLimitError,
    headers: (res) => {
      retryAfter(res);
      expect(res.headers.get("x-ratelimit-limit-tokens")).toBe("100");
    },
  },
  {
    case: "every machine serving the model offline", status: 503, type: "service_unavailable_error", code: "machine_offline", param: null,
    request: (ctx) => chat(ctx, { model: ctx.offlineModel }),
    client: (ctx) => sdkChat(ctx, { model: ctx.offlineModel }),
    errorClass: OpenAI.InternalServerError,
    headers: retryAfter,
  },
  {
    case: "runtime not running", status: 503, type: "service_unavailable_error", code: "runtime_unavailable", param: null,
    request: (ctx) => chat(ctx, { model: ctx.loadingModel }),
    client: (ctx) => sdkChat(ctx, { model: ctx.loadingModel }),
    errorClass: OpenAI.InternalServerError,
    headers: retryAfter,
  },
  {
    case: "POST /v1/completions", status: 404, type: "invalid_request_error", code: "unsupported_endpoint", param: null,
    request: (ctx) => ({ path: "/v1/completions", init: json(ctx.key, { model: ctx.gw.modelId, prompt: "hi" }) }),
    client: (ctx) => client(ctx).completions.create({ model: ctx.gw.modelId, prompt: "hi" }),
    errorClass: OpenAI.NotFoundError,
    message: /POST \/v1\/chat\/completions/,
  },
  {
    case: "unknown path", status: 404, type: "invalid_request_error", code: "unknown_url", param: null,
    request: (ctx) => ({ path: "/v1/moderations", init: json(ctx.key, { model: "x", input: "hi" }) }),
    client: (ctx) => client(ctx).moderations.create({ model: "x", input: "hi" }),
    errorClass: OpenAI.NotFoundError,
    message: "Unknown request URL: POST /v1/moderations. Please check the URL for typos.",
  },
  {
    case: "body is not JSON", status: 400, type: "invalid_request_error", code: "invalid_json", param: null,
    request: (ctx) => ({ path: "/v1/chat/completions", init: json(ctx.key, "{\"model\": ") }),
  },
  {
    case: "Content-Type is not JSON", status: 415, type: "invalid_request_error", code: "unsupported_media_type", param: null,
    request: (ctx) => ({ path: "/v1/chat/completions", init: json(ctx.key, "{}", { "content-type": "text/plain" }) }),
  },
  {
    case: "missing required parameter", status: 400, type: "invalid_request_error", code: "missing_required_parameter", param: "messages",
    request: (ctx) => ({ path: "/v1/chat/completions", init: json(ctx.key, { model: ctx.gw.modelId }) }),
    client: (ctx) => client(ctx).chat.completions.create({ model: ctx.gw.modelId } as never),
    errorClass: OpenAI.BadRequestError,
  },
  {
    case: "temperature out of range", status: 400, type: "invalid_request_error", code: "invalid_value", param: "temperature",
    request: (ctx) => chat(ctx, { temperature: 3 }),
    client: (ctx) => sdkChat(ctx, { temperature: 3 }),
    errorClass: OpenAI.BadRequestError,
  },
  {
    case: "top_p out of range", status: 400, type: "invalid_request_error", code: "invalid_value", param: "top_p",
    request: (ctx) => chat(ctx, { top_p: 1.5 }),
  },
  {
    case: "parameter not in the vendor interface", status: 400, type: "invalid_request_error", code: "unknown_parameter", param: "banana",
    request: (ctx) => chat(ctx, { banana: 1 }),
    client: (ctx) => sdkChat(ctx, { banana: 1 }),
    errorClass: OpenAI.BadRequestError,
    message: "Unrecognized request argument supplied: banana",
  },
  {
    case: "parameter the stack cannot honour", status: 400, type: "invalid_request_error", code: "unsupported_parameter", param: "n",
    request: (ctx) => chat(ctx, { n: 3 }),
    client: (ctx) => sdkChat(ctx, { n: 3 }),
    errorClass: OpenAI.BadRequestError,
  },
  {
    case: "prompt plus max_tokens beyond the context", status: 400, type: "invalid_request_error", code: "context_length_exceeded",
    request: (ctx) => chat(ctx, { messages: [{ role: "user", content: "word ".repeat(700) }], max_tokens: 5 }),
    client: (ctx) => sdkChat(ctx, { messages: [{ role: "user", content: "word ".repeat(700) }], max_tokens: 5 }),
    errorClass: OpenAI.BadRequestError,
  },
  {
    case: "body larger than the limit", status: 413, type: "invalid_request_error", code: "request_too_large", param: null,
    request: (ctx) => chat(ctx, { messages: [{ role: "user", content: "x".repeat(4 * 1024 * 1024 + 1) }] }),
  },
];

describe("every row of the decisions error table", () => {
  const ctx = {} as Ctx;

  beforeAll(async () => {
    const gw = await startTestGateway();
    ctx.gw = gw;
    ctx.key = gw.apiKey;
    const offline = await gw.addMachine(gw.orgId);
    ctx.offlineModel = "offline-model";
    await gw.addStack({ orgId: gw.orgId, machineId: offline.machineId, modelId: ctx.offlineModel });
    await offline.agent.stop();
    await vi.waitFor(() => expect(gw.relay.registry.get(offline.machineId)).toBeUndefined(), { timeout: 5_000, interval: 10 });
    ctx.loadingModel = "crashed-model";
    const crashed = await gw.addStack({ orgId: gw.orgId, machineId: gw.machineId, modelId: ctx.loadingModel });
    await gw.agent.host.run(crashed, { kind: "removeStack" }, () => {});
    const other = await gw.addStack({ orgId: gw.orgId, machineId: gw.machineId, modelId: "other" });
    ctx.keys = {
      restricted: (await gw.relay.control.keys.create(OP, gw.orgId, { stackIds: [other] })).key,
      rpm: (await gw.relay.control.keys.create(OP, gw.orgId, { rpm: 1 })).key,
      tpm: (await gw.relay.control.keys.create(OP, gw.orgId, { tpm: 100 })).key,
    };
    // Use up the 1-rpm key so that the rows below see its limit.
    expect((await fetch(gw.relay.url + chat(ctx, {}, ctx.keys.rpm).path, chat(ctx, {}, ctx.keys.rpm).init)).status).toBe(200);
  });
  afterAll(async () => {
    await ctx.gw?.close();
  });

  it.each(ROWS.map((r) => [r.case, r] as const))("%s: exact status, headers and body over raw HTTP", async (_name, row) => {
    const { path, init } = row.request(ctx);
    const res = await fetch(ctx.gw.relay.url + path, init);
    expect(res.status).toBe(row.status);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    expect(res.headers.get("x-request-id")).toMatch(/^req_/);
    const body = (await res.json()) as { error: Record<string, unknown> };
    expect(Object.keys(body)).toEqual(["error"]);
    expect(Object.keys(body.error).sort()).toEqual(["code", "message", "param", "type"]);
    expect(body.error).toMatchObject({ type: row.type, code: row.code });
    if (row.param !== undefined) expect(body.error.param).toBe(row.param);
    if (typeof row.message === "string") expect(body.error.message).toBe(row.message);
    else if (row.message) expect(body.error.message).toMatch(row.message);
    row.headers?.(res);
  });

  it.each(ROWS.filter((r) => r.client).map((r) => [r.case, r] as const))("%s: the error an OpenAI client sees", async (_name, row) => {
    const err = await row.client!(ctx).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(row.errorClass!);
    expect(err).toMatchObject({ status: row.status, type: row.type, code: row.code });
  });

  it("anything unexpected: 500 server_error internal_error, details only in the log", async () => {
    const lines: string[] = [];
    const app = express();
    app.get("/boom", () => {
      throw new Error("database password is hunter2");
    });
    app.use(errorHandler(createLogger({ write: (line) => lines.push(line) })));
    const server = app.listen(0, "127.0.0.1");
    await new Promise((r) => server.once("listening", r));
    try {
      const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/boom`);
      expect(res.status).toBe(500);
      const text = await res.text();
      expect(JSON.parse(text)).toEqual({ error: { message: "The server had an error while processing your request.", type: "server_error", param: null, code: "internal_error" } });
      expect(text).not.toContain("hunter2");
      expect(lines.join("\n")).toContain("hunter2");
    } finally {
      server.close();
    }
  });
});
