import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ApiKey, Usage } from "../../relay/admin-contract/index.js";
import { startTestGateway, type TestGateway } from "../helpers/test-gateway.js";
import { OP } from "../helpers/operator.js";

/** One API of the gateway: its path, how it carries the key, a body asking `model` for `text`, and its refusal for an error row. */
interface Api {
  name: string;
  path: string;
  headers: (key: string) => Record<string, string>;
  body: (model: string, text: string, extra?: Record<string, unknown>) => Record<string, unknown>;
  /** A body whose fault the API's own checks find, and the code of its refusal. */
  badBody: (model: string) => Record<string, unknown>;
  badCode: string;
  /** Whether it generates: an embeddings or rerank request's tokens are its inputs' alone. */
  generates: boolean;
  /** Whether it streams. */
  streams: boolean;
  /** The refusal's body for an error code, as the API shapes it. */
  refusal: (code: string, openaiType: string, status: number) => unknown;
}

const openAiRefusal = (code: string, type: string) => ({ error: { message: expect.any(String), type, param: expect.toSatisfy((p: unknown) => p === null || typeof p === "string"), code: code === "rate_limit_requests" ? "rate_limit_exceeded" : code } });
const ANTHROPIC_TYPE: Record<number, string> = { 400: "invalid_request_error", 401: "authentication_error", 403: "permission_error", 404: "not_found_error", 429: "rate_limit_error", 529: "overloaded_error" };

const APIS: Api[] = [
  {
    name: "chat completions",
    path: "/v1/chat/completions",
    headers: (key) => ({ authorization: `Bearer ${key}` }),
    body: (model, text, extra) => ({ model, messages: [{ role: "user", content: text }], ...extra }),
    badBody: (model) => ({ model, messages: "not a list" }),
    badCode: "invalid_value",
    generates: true,
    streams: true,
    refusal: (code, type) => openAiRefusal(code, type),
  },
  {
    name: "Messages",
    path: "/v1/messages",
    headers: (key) => ({ "x-api-key": key, "anthropic-version": "2023-06-01" }),
    body: (model, text, extra) => ({ model, max_tokens: 64, messages: [{ role: "user", content: text }], ...extra }),
    badBody: (model) => ({ model, messages: [{ role: "user", content: "hi" }] }),
    badCode: "missing_required_parameter",
    generates: true,
    streams: true,
    refusal: (_code, _type, status) => ({ type: "error", error: { type: ANTHROPIC_TYPE[status], message: expect.any(String) } }),
  },
  {
    name: "Responses",
    path: "/v1/responses",
    headers: (key) => ({ authorization: `Bearer ${key}` }),
    body: (model, text, extra) => ({ model, input: text, ...extra }),
    badBody: (model) => ({ model, input: [{ type: "item_reference", id: "msg_1" }] }),
    badCode: "unsupported_parameter",
    generates: true,
    streams: true,
    refusal: (code, type) => openAiRefusal(code, type),
  },
  {
    name: "embeddings",
    path: "/v1/embeddings",
    headers: (key) => ({ authorization: `Bearer ${key}` }),
    body: (model, text, extra) => ({ model, input: text, ...(extra?.stream ? {} : extra) }),
    badBody: (model) => ({ model, input: "" }),
    badCode: "invalid_value",
    generates: false,
    streams: false,
    refusal: (code, type) => openAiRefusal(code, type),
  },
  {
    name: "rerank",
    path: "/v1/rerank",
    headers: (key) => ({ authorization: `Bearer ${key}` }),
    // The text is the query, read with one empty document: its words are the request's tokens.
    body: (model, text, extra) => ({ model, query: text, documents: [""], ...(extra?.stream ? {} : extra) }),
    badBody: (model) => ({ model, query: "", documents: ["a"] }),
    badCode: "invalid_value",
    generates: false,
    streams: false,
    refusal: (code, type) => openAiRefusal(code, type),
  },
];

// Every rule that holds for chat holds for the other APIs (embeddings and rerank too), in their own shapes: keys, restrictions, limits,
// revocation, unknown models, bad bodies and failing runtimes, and the usage and request log they leave. With the
// stand-in model of test/fakes (no llama.cpp), so each runtime failure is reached on purpose.
describe.each(APIS)("the $name API's refusals", (api) => {
  let gw: TestGateway;
  const admin = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    const res = await fetch(`${gw.relay.url}${path}`, { method, headers: { authorization: `Bearer ${gw.relay.adminToken}`, "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
    expect(res.status, await res.clone().text()).toBeLessThan(300);
    return (await res.json()) as T;
  };
  const send = (key: string, body: Record<string, unknown>) => fetch(`${gw.relay.url}${api.path}`, { method: "POST", headers: { ...api.headers(key), "content-type": "application/json" }, body: JSON.stringify(body) });
  const expectRefusal = async (res: Response, status: number, code: string, openaiType: string) => {
    const body: unknown = await res.json();
    expect([res.status, body]).toEqual([status, api.refusal(code, openaiType, status)]);
  };

  beforeAll(async () => {
    gw = await startTestGateway({ runtime: "fake" });
  });
  afterAll(async () => {
    await gw?.close();
  });

  it("answers with the key it was given, and refuses a made-up key, a revoked key and a missing one", async () => {
    const k = await admin<ApiKey & { key: string }>("POST", "/admin/v1/keys", { org: gw.orgId, name: `${api.name} key` });
    expect((await send(k.key, api.body(gw.modelId, "alpha beta"))).status).toBe(200);
    await expectRefusal(await send("mk_live_nobody", api.body(gw.modelId, "alpha")), 401, "invalid_api_key", "authentication_error");
    await admin("POST", `/admin/v1/keys/${k.id}/revoke`);
    await expectRefusal(await send(k.key, api.body(gw.modelId, "alpha")), 401, "invalid_api_key", "authentication_error");
    const none = await fetch(`${gw.relay.url}${api.path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(api.body(gw.modelId, "alpha")) });
    await expectRefusal(none, 401, "missing_api_key", "authentication_error");
  });

  it("refuses a stack the key is not allowed, a model nobody serves and a bad body", async () => {
    const other = await gw.addStack({ orgId: gw.orgId, machineId: gw.machineId, modelId: "other-model" });
    const { key } = await gw.relay.control.keys.create(OP, gw.orgId, { stackIds: [other] });
    await expectRefusal(await send(key, api.body(gw.modelId, "alpha")), 403, "model_access_denied", "permission_error");
    await expectRefusal(await send(gw.apiKey, api.body("no-such-model", "alpha")), 404, "model_not_found", "invalid_request_error");
    await expectRefusal(await send(gw.apiKey, api.badBody(gw.modelId)), 400, api.badCode, "invalid_request_error");
  });

  it("holds a key to its request limit, with Retry-After", async () => {
    const { key } = await gw.relay.control.keys.create(OP, gw.orgId, { rpm: 1 });
    expect((await send(key, api.body(gw.modelId, "alpha"))).status).toBe(200);
    const refused = await send(key, api.body(gw.modelId, "alpha"));
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(refused.headers.get("x-ratelimit-limit-requests")).toBe("1");
    await expectRefusal(refused, 429, "rate_limit_requests", "requests");
  });

  it("tells a runtime's failure in its shape, streamed or not, before the first byte", async () => {
    const down = api.name === "Messages" ? 529 : 503;
    await expectRefusal(await send(gw.apiKey, api.body(gw.modelId, "fail runtime_unavailable")), down, "runtime_unavailable", "service_unavailable_error");
    if (api.streams) await expectRefusal(await send(gw.apiKey, api.body(gw.modelId, "fail runtime_unavailable", { stream: true })), down, "runtime_unavailable", "service_unavailable_error");
    await expectRefusal(await send(gw.apiKey, api.body(gw.modelId, "fail context_length_exceeded")), 400, "context_length_exceeded", "invalid_request_error");
  });

  it("counts its tokens in usage and its requests in the request log, answered and refused", async () => {
    const k = await admin<ApiKey & { key: string }>("POST", "/admin/v1/keys", { org: gw.orgId, name: "counted" });
    expect((await send(k.key, api.body(gw.modelId, "one two three four"))).status).toBe(200);
    const streamed = await send(k.key, api.body(gw.modelId, "five six", { stream: true }));
    if (api.streams) expect(streamed.headers.get("content-type")).toContain("text/event-stream");
    await streamed.text();
    expect((await send(k.key, api.body("no-such-model", "x"))).status).toBe(404);
    // The stand-in counts a word as a token: the prompt's words, and as many in the answer.
    const usage = await admin<Usage>("GET", `/admin/v1/usage?org=${gw.orgId}&by=key`);
    expect(usage.totals.find((t) => t.group === k.id)?.total).toMatchObject({ requests: 3, errors: 1, prompt_tokens: 6, completion_tokens: api.generates ? 6 : 0 });
    const log = await admin<{ data: { status: number; stream: boolean; prompt_tokens: number }[] }>("GET", `/admin/v1/requests?org=${gw.orgId}&key=${k.id}`);
    expect(log.data.map((r) => [r.status, r.stream, r.prompt_tokens])).toEqual([
      [404, false, 0],
      [200, api.streams, 2],
      [200, false, 4],
    ]);
  });
});
