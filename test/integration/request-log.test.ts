import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ApiKey, AuditEvent, LoggedRequest, Page, RequestDetail, Usage } from "../../relay/admin-contract/index.js";
import { startTestGateway, type TestGateway } from "../helpers/test-gateway.js";
import { WebClient } from "../helpers/web-client.js";
import { OP } from "../helpers/operator.js";
import { csvRecords } from "../helpers/csv.js";

// The request log (issue 21, point 5): the gateway's requests per organization, answered and refused, with
// their key, model, status, error, tokens and times; refused ones count in usage; prompts and answers are kept
// only by a stack that captures, for its hours. Real GGUF inference through the real gateway.
describe("the request log", () => {
  let gw: TestGateway;
  const operator = (method: string, path: string, body?: unknown) =>
    fetch(`${gw.relay.url}${path}`, { method, headers: { authorization: `Bearer ${gw.relay.adminToken}`, "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
  const json = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    const res = await operator(method, path, body);
    expect(res.status, await res.clone().text()).toBeLessThan(300);
    return (await res.json()) as T;
  };
  const log = (query = "") => json<Page<LoggedRequest>>("GET", `/admin/v1/requests?org=${gw.orgId}${query}`);
  const newKey = (body: Record<string, unknown>) => json<ApiKey & { key: string }>("POST", "/admin/v1/keys", { org: gw.orgId, ...body });
  const chat = (key: string, body: Record<string, unknown>) =>
    fetch(`${gw.baseURL}/chat/completions`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify({ model: gw.modelId, max_tokens: 4, ...body }) });
  const hello = [{ role: "user", content: "Once upon a time" }];

  beforeAll(async () => {
    gw = await startTestGateway();
  });
  afterAll(async () => {
    await gw?.close();
  });

  it("logs answered requests, streamed and not, with their key, model, stack, tokens and times, and no prompt", async () => {
    const k = await newKey({ name: "writer" });
    const plain = await chat(k.key, { messages: hello });
    expect(plain.status).toBe(200);
    const streamed = await chat(k.key, { messages: hello, stream: true });
    expect(streamed.status).toBe(200);
    await streamed.text();

    const page = await log(`&key=${k.id}`);
    expect(page).toMatchObject({ object: "list", total: 2, page: 1, per_page: 50 });
    const [s, p] = page.data;
    expect(p).toMatchObject({ object: "request", key_id: k.id, key_name: "writer", model: gw.modelId, stack_id: gw.stackId, stack_name: "test-stack", machine_id: gw.machineId, stream: false, status: 200, error_code: null, captured: false, capture_until: null });
    expect(p!.request_id).toBe(plain.headers.get("x-request-id"));
    expect(s).toMatchObject({ stream: true, status: 200, error_code: null, request_id: streamed.headers.get("x-request-id") });
    for (const r of [p!, s!]) {
      expect(r.prompt_tokens).toBeGreaterThan(0);
      expect(r.completion_tokens).toBeGreaterThan(0);
      expect(r.first_token_ms).not.toBeNull();
      expect(r.latency_ms).toBeGreaterThanOrEqual(r.first_token_ms!);
      expect(r.at).toBeLessThanOrEqual(Date.now());
    }
    // Newest first.
    expect(s!.id > p!.id).toBe(true);
    const detail = await json<RequestDetail>("GET", `/admin/v1/requests/${p!.id}`);
    expect(detail).toMatchObject({ id: p!.id, key_name: "writer", captured: false, capture: null, api: "chat/completions" });
    // Each request says which API it called, and the log is filtered by it.
    const anthropic = await fetch(`${gw.relay.url}/v1/messages`, {
      method: "POST",
      headers: { "x-api-key": k.key, "anthropic-version": "2023-06-01", "content-type": "application/json" },
      body: JSON.stringify({ model: gw.modelId, max_tokens: 2, messages: hello }),
    });
    expect(anthropic.status).toBe(200);
    const counted = await fetch(`${gw.relay.url}/v1/messages/count_tokens`, { method: "POST", headers: { "x-api-key": k.key, "content-type": "application/json" }, body: JSON.stringify({ model: gw.modelId, messages: hello }) });
    expect(counted.status).toBe(200);
    expect((await log(`&key=${k.id}`)).data.map((r) => r.api)).toEqual(["messages/count_tokens", "messages", "chat/completions", "chat/completions"]);
    expect((await log(`&key=${k.id}&api=messages`)).data.map((r) => r.request_id)).toEqual([anthropic.headers.get("request-id") ?? anthropic.headers.get("x-request-id")]);
    const wrong = await operator("GET", `/admin/v1/requests?org=${gw.orgId}&api=completions`);
    expect(wrong.status).toBe(400);
  });

  it("logs refused requests with their status and error, counts them as errors in usage, and filters by them", async () => {
    const k = await newKey({ name: "refused", rpm: 1 });
    expect((await chat(k.key, { messages: hello })).status).toBe(200);
    expect((await chat(k.key, { messages: hello })).status).toBe(429);
    // A model nobody serves is refused before the limit is consulted: 404, whatever the key's minute holds.
    expect((await chat(k.key, { model: "no-such-model", messages: hello })).status).toBe(404);
    await json("PATCH", `/admin/v1/keys/${k.id}`, { rpm: null });
    expect((await chat(k.key, { model: "no-such-model", messages: hello })).status).toBe(404);
    expect((await chat(k.key, { messages: "not a list" })).status).toBe(400);
    // A key that expired is refused as its own: the log names it. A key nobody has is no organization's.
    // No command makes a key that has expired already: the store, as time would.
    await gw.relay.store.keys.update(k.id, { expiresAt: Date.now() - 1 });
    expect((await chat(k.key, { messages: hello })).status).toBe(401);
    expect((await chat("mk_live_nobody", { messages: hello })).status).toBe(401);

    const all = await log(`&key=${k.id}`);
    // (Refused for its key, a request's body is not read: its model is not known.)
    expect(all.data.map((r) => [r.status, r.error_code, r.model])).toEqual([
      [401, "invalid_api_key", ""],
      [400, "invalid_value", gw.modelId],
      [404, "model_not_found", "no-such-model"],
      [404, "model_not_found", "no-such-model"],
      [429, "rate_limit_requests", gw.modelId],
      [200, null, gw.modelId],
    ]);
    expect(all.data.slice(0, 5).every((r) => r.prompt_tokens === 0 && r.completion_tokens === 0 && r.key_name === "refused")).toBe(true);

    expect((await log(`&key=${k.id}&status=error`)).data.map((r) => r.status)).toEqual([401, 400, 404, 404, 429]);
    expect((await log(`&key=${k.id}&status=ok`)).data.map((r) => r.status)).toEqual([200]);
    expect((await log(`&key=${k.id}&status=404`)).total).toBe(2);
    expect((await log(`&key=${k.id}&status=4xx&per_page=2&page=2`))).toMatchObject({ total: 5, page: 2, per_page: 2, data: [{ status: 404 }, { status: 404 }] });
    expect((await log(`&key=${k.id}&model=no-such-model`)).total).toBe(2);
    expect((await log(`&q=SUCH-mod`)).data.every((r) => r.model === "no-such-model")).toBe(true);
    const one = all.data[2]!;
    expect((await log(`&q=${one.request_id}`)).data.map((r) => r.id)).toEqual([one.id]);

    // Usage counts every one of them, the refused as errors.
    const usage = await json<Usage>("GET", `/admin/v1/usage?org=${gw.orgId}&by=key`);
    expect(usage.totals.find((t) => t.group === k.id)?.total).toMatchObject({ requests: 6, errors: 5 });
    // Refused before a model was chosen, they count under none: a name a client makes up is no usage group.
    const byModel = await json<Usage>("GET", `/admin/v1/usage?org=${gw.orgId}&by=model`);
    expect(byModel.totals.find((t) => t.group === "no-such-model")).toBeUndefined();
    expect(byModel.totals.find((t) => t.group === "")?.total).toMatchObject({ requests: 4, errors: 4 });
    expect(byModel.totals.find((t) => t.group === gw.modelId)?.total.errors).toBeGreaterThanOrEqual(1);

    // The totals are a page, searched by a key's name or id, sorted and summed on the relay.
    const found = await json<Usage>("GET", `/admin/v1/usage?org=${gw.orgId}&by=key&q=${encodeURIComponent(k.name!.toUpperCase())}`);
    expect(found).toMatchObject({ total: 1, page: 1, per_page: 100, sum: { requests: 6, errors: 5 } });
    expect(found.totals.map((t) => t.name)).toEqual([k.name]);
    expect((await json<Usage>("GET", `/admin/v1/usage?org=${gw.orgId}&by=key&q=${k.id}`)).totals.map((t) => t.group)).toEqual([k.id]);
    const every = await json<Usage>("GET", `/admin/v1/usage?org=${gw.orgId}&by=key`);
    expect(every.total).toBe(every.groups);
    expect(every.sum.requests).toBe(every.totals.reduce((n, t) => n + t.total.requests, 0));
    const second = await json<Usage>("GET", `/admin/v1/usage?org=${gw.orgId}&by=key&per_page=1&page=2&sort=errors&order=desc`);
    const byErrors = [...every.totals].sort((a, b) => b.total.errors - a.total.errors);
    expect([second.totals.length, second.totals[0]!.total.errors, second.sum]).toEqual([1, byErrors[1]!.total.errors, every.sum]);
    expect((await json<Usage>("GET", `/admin/v1/usage?org=${gw.orgId}&by=model&q=${gw.modelId}`)).totals.map((t) => t.group)).toEqual([gw.modelId]);
    const wrong = await operator("GET", `/admin/v1/usage?org=${gw.orgId}&sort=cost`);
    expect(wrong.status).toBe(400);
    expect(((await wrong.json()) as { error: { param: string; message: string } }).error).toMatchObject({ param: "sort", message: "'sort' must be one of name, requests, errors, prompt_tokens, completion_tokens." });
  });

  it("logs a revoked key's requests and a disabled person's key's as their own, saying why; a key nobody has stays unlogged", async () => {
    const k = await newKey({ name: "gone" });
    expect((await chat(k.key, { messages: hello })).status).toBe(200);
    await json("POST", `/admin/v1/keys/${k.id}/revoke`);
    const refused = await chat(k.key, { messages: hello });
    expect(refused.status).toBe(401);
    expect(((await refused.json()) as { error: { code: string; message: string } }).error).toMatchObject({
      code: "invalid_api_key",
      message: expect.stringMatching(/^Incorrect API key provided: mk_live_\S+\. This key was revoked at \d{4}-\d\d-\d\dT[\d:.]+Z; ask an admin of the organization for a new one\.$/),
    });
    expect((await log(`&key=${k.id}`)).data.map((r) => [r.status, r.error_code, r.key_name])).toEqual([
      [401, "invalid_api_key", "gone"],
      [200, null, "gone"],
    ]);
    expect((await json<Usage>("GET", `/admin/v1/usage?org=${gw.orgId}&by=key`)).totals.find((t) => t.group === k.id)?.total).toMatchObject({ requests: 2, errors: 1 });

    // A key whose maker an admin disabled: refused, logged under it, its holder told why.
    const person = await json<{ id: string }>("POST", "/admin/v1/users", { org: gw.orgId, login: "leaver@example.com", role: "member", password: "leaver-password-1" });
    const web = new WebClient(gw.relay.url);
    expect((await web.signIn("leaver@example.com", "leaver-password-1")).status).toBe(200);
    const theirs = await web.json<ApiKey & { key: string }>("POST", "/admin/v1/keys", { name: "leavers-key" });
    expect((await chat(theirs.key, { messages: hello })).status).toBe(200);
    await json("PATCH", `/admin/v1/users/${person.id}`, { disabled: true });
    const off = await chat(theirs.key, { messages: hello });
    expect([off.status, ((await off.json()) as { error: { message: string } }).error.message]).toEqual([401, expect.stringContaining("The person who made this key is disabled")]);
    expect((await log(`&key=${theirs.id}`)).data.map((r) => r.status)).toEqual([401, 200]);
    // Enabled again, the key serves again.
    await json("PATCH", `/admin/v1/users/${person.id}`, { disabled: false });
    expect((await chat(theirs.key, { messages: hello })).status).toBe(200);
    // A key nobody has is no organization's: nothing logged.
    const before = (await log()).total;
    expect((await chat("mk_live_nobodyHasThisKey000000000000000000000", { messages: hello })).status).toBe(401);
    expect((await log()).total).toBe(before);
  });

  it("logs no more than 60 refusals of one key a minute, and keeps a model name only when it is one", async () => {
    const k = await newKey({ name: "noisy" });
    for (let i = 0; i < 70; i++) expect((await chat(k.key, { messages: "not a list" })).status).toBe(400);
    expect((await chat(k.key, { model: "bad\u0000model\u001b[31m", messages: hello })).status).toBe(404);
    const logged = await log(`&key=${k.id}&per_page=100`);
    expect(logged.total).toBe(60);
    // Every one still counts in usage.
    const usage = await json<Usage>("GET", `/admin/v1/usage?org=${gw.orgId}&by=key`);
    expect(usage.totals.find((t) => t.group === k.id)?.total).toMatchObject({ requests: 71, errors: 71 });
    // A key that answers is logged again, refused or not, next minute; an answered request always is.
    const other = await newKey({ name: "quiet" });
    expect((await chat(other.key, { model: "bad\u0000model", messages: hello })).status).toBe(404);
    expect((await log(`&key=${other.id}`)).data.map((r) => [r.status, r.model])).toEqual([[404, ""]]);
  });

  it("filters by stack and refuses a filter it cannot read, in the documented error shape", async () => {
    const byStack = await log(`&stack=${gw.stackId}`);
    expect(byStack.total).toBeGreaterThan(0);
    expect(byStack.data.every((r) => r.stack_id === gw.stackId)).toBe(true);
    expect((await log(`&stack=stk_nonexistent`)).total).toBe(0);
    for (const [query, param] of [
      ["&status=teapot", "status"],
      ["&status=999", "status"],
      ["&per_page=501", "per_page"],
      ["&page=0", "page"],
    ] as const) {
      const res = await operator("GET", `/admin/v1/requests?org=${gw.orgId}${query}`);
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: { param: string; code: string } }).error).toMatchObject({ code: "invalid_value", param });
    }
    const missing = await operator("GET", "/admin/v1/requests/req_0000000000000000");
    expect(missing.status).toBe(404);
    expect((await operator("GET", "/admin/v1/requests/nonsense")).status).toBe(404);
  });

  it("keeps prompts and answers only for a stack that captures, for its hours, and shows them to admins only", async () => {
    const k = await newKey({ name: "captured" });
    const res = await operator("PATCH", `/admin/v1/stacks/${gw.stackId}`, { capture_hours: 2 });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ capture_hours: 2, changed: ["capture_hours"], redeployed: false, state: "deployed" });
    const audit = await json<{ data: AuditEvent[] }>("GET", `/admin/v1/audit?org=${gw.orgId}&action=stack.changed`);
    expect(audit.data[0]!.detail).toEqual({ capture_hours_was: null, capture_hours: 2 });

    const plain = await chat(k.key, { messages: hello });
    const answer = ((await plain.json()) as { choices: { message: { content: string } }[] }).choices[0]!.message.content;
    const streamed = await chat(k.key, { messages: hello, stream: true });
    const sse = await streamed.text();
    const [s, p] = (await log(`&key=${k.id}`)).data;
    expect(p).toMatchObject({ captured: true });
    expect(p!.capture_until).toBeGreaterThan(Date.now() + 3_500_000);
    const detail = await json<RequestDetail>("GET", `/admin/v1/requests/${p!.id}`);
    expect(detail.capture).toEqual({ messages: hello, answer, tool_calls: [], truncated: false });
    const streamedDetail = await json<RequestDetail>("GET", `/admin/v1/requests/${s!.id}`);
    const pieces = sse
      .split("\n")
      .filter((l) => l.startsWith("data: {"))
      .map((l) => (JSON.parse(l.slice(6)) as { choices: { delta: { content?: string } }[] }).choices[0]?.delta.content ?? "")
      .join("");
    expect(streamedDetail.capture).toMatchObject({ messages: hello, answer: pieces, truncated: false });

    // A member of the organization reads the log, not what was captured.
    await gw.relay.control.users.create(OP, { org: gw.orgId,  login: "member", password: "member-password-1", role: "member" });
    const member = new WebClient(gw.relay.url);
    expect((await member.signIn("member", "member-password-1")).status).toBe(200);
    expect(await member.json<RequestDetail>("GET", `/admin/v1/requests/${p!.id}`)).toMatchObject({ id: p!.id, captured: true, capture: null });
    expect((await member.json<Page<LoggedRequest>>("GET", `/admin/v1/requests?key=${k.id}`)).total).toBe(2);
    // Another organization's user does not see it at all.
    const other = await gw.relay.control.orgs.create(OP, { name: "Other Org" });
    await gw.relay.control.users.create(OP, { org: other.id,  login: "stranger", password: "stranger-password-1", role: "admin" });
    const stranger = new WebClient(gw.relay.url);
    await stranger.signIn("stranger", "stranger-password-1");
    expect((await stranger.call("GET", `/admin/v1/requests/${p!.id}`)).status).toBe(404);
    expect(await stranger.json<Page<LoggedRequest>>("GET", "/admin/v1/requests")).toMatchObject({ total: 0, data: [] });

    // Past its hours the capture is gone, the request stays.
    await gw.relay.store.requests.prune({ before: 0, keepPerOrg: 1_000_000, orgs: [], now: Date.now() + 2 * 3_600_000 + 1000 });
    expect(await json<RequestDetail>("GET", `/admin/v1/requests/${p!.id}`)).toMatchObject({ captured: false, capture_until: null, capture: null, status: 200 });
    // Turned off, nothing more is kept, and what was kept goes at once.
    await (await chat(k.key, { messages: hello })).text();
    const fresh = (await log(`&key=${k.id}`)).data[0]!;
    expect(fresh).toMatchObject({ captured: true });
    await json("PATCH", `/admin/v1/stacks/${gw.stackId}`, { capture_hours: null });
    expect(await json<RequestDetail>("GET", `/admin/v1/requests/${fresh.id}`)).toMatchObject({ captured: false, capture: null });
    await (await chat(k.key, { messages: hello })).text();
    expect((await log(`&key=${k.id}`)).data[0]).toMatchObject({ captured: false });
    const bad = await operator("PATCH", `/admin/v1/stacks/${gw.stackId}`, { capture_hours: 721 });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { param: string } }).error.param).toBe("capture_hours");
  });

  it("exports the request log as CSV, the filter of its page applied, in batches however many rows, every field kept as text", async () => {
    const k = await newKey({ name: '=HYPERLINK("evil"), "quoted"' });
    expect((await chat(k.key, { messages: hello })).status).toBe(200);
    expect((await chat(k.key, { messages: hello, model: "no-such-model" })).status).toBe(404);
    const csv = async (query: string) => {
      const res = await operator("GET", `/admin/v1/requests.csv?org=${gw.orgId}${query}`);
      expect(res.status, await res.clone().text()).toBe(200);
      expect([res.headers.get("content-type"), res.headers.get("content-disposition")]).toEqual(["text/csv; charset=utf-8", expect.stringMatching(/^attachment; filename="requests-\d{4}-\d\d-\d\d\.csv"$/)]);
      return csvRecords(await res.text());
    };
    const mine = await csv(`&key=${k.id}`);
    const listed = await log(`&key=${k.id}`);
    expect(mine.map((r) => [r.id, r.status, r.error_code, r.model, r.key_id])).toEqual(listed.data.map((r) => [r.id, String(r.status), r.error_code ?? "", r.model, k.id]));
    // A name a spreadsheet would run as a formula stays text; quotes and commas survive.
    expect(mine[0]!.key_name).toBe(`'=HYPERLINK("evil"), "quoted"`);
    expect(new Date(mine[0]!.at!).getTime()).toBe(listed.data[0]!.at);
    expect((await csv(`&key=${k.id}&status=404`)).map((r) => r.status)).toEqual(["404"]);
    // 2,500 more rows: read and written a thousand at a time, each once, newest first.
    const org = await gw.relay.control.orgs.create(OP, { name: "Exporting Org" });
    const row = (i: number) => ({ orgId: org.id, at: Date.now() - 10_000 + i, requestId: `x${i}`, keyId: null, model: "m", stackId: null, machineId: null, stream: false, status: 200, errorCode: null, promptTokens: 1, completionTokens: 2, latencyMs: 3, firstTokenMs: null, loadMs: null, captureJson: null, captureUntil: null });
    await gw.relay.store.requests.insert(Array.from({ length: 2500 }, (_, i) => row(i)));
    const res = await operator("GET", `/admin/v1/requests.csv?org=${org.id}`);
    const all = csvRecords(await res.text());
    expect(all).toHaveLength(2500);
    expect(new Set(all.map((r) => r.id)).size).toBe(2500);
    expect([all[0]!.request_id, all[2499]!.request_id]).toEqual(["x2499", "x0"]);
    // A filter it cannot read is refused in the API's shape, before any CSV.
    const bad = await operator("GET", `/admin/v1/requests.csv?org=${gw.orgId}&status=teapot`);
    expect([bad.status, bad.headers.get("content-type")]).toEqual([400, expect.stringContaining("application/json")]);
  });

  it("searches the audit log by who, what and when, and exports what it finds as CSV, to admins only", async () => {
    await json("POST", "/admin/v1/users", { org: gw.orgId, login: "auditor@example.com", role: "admin", password: "auditor-password-1" });
    const auditor = new WebClient(gw.relay.url);
    expect((await auditor.signIn("auditor@example.com", "auditor-password-1")).status).toBe(200);
    const before = Date.now();
    const made = await auditor.json<ApiKey & { key: string }>("POST", "/admin/v1/keys", { name: "audited key" });
    await auditor.json("POST", `/admin/v1/keys/${made.id}/block`);
    await json("POST", `/admin/v1/keys/${made.id}/revoke`);
    type Found = { data: AuditEvent[] };
    const find = (query: string) => json<Found>("GET", `/admin/v1/audit?org=${gw.orgId}${query}`);
    // By who: words of a login, any case, or an id.
    const byAuditor = await find("&actor=AUDITOR");
    expect(byAuditor.data.map((e) => e.action)).toEqual(["key.blocked", "key.created", "sign_in"]);
    expect((await find(`&actor=${byAuditor.data[0]!.actor.id}`)).data).toHaveLength(3);
    // To what: words of its name, or its id; with an action family and a time range.
    expect((await find("&target=audited")).data.map((e) => [e.action, e.actor.kind])).toEqual([
      ["key.revoked", "operator"],
      ["key.blocked", "user"],
      ["key.created", "user"],
    ]);
    expect((await find(`&target=${made.id}&action=key.revoked`)).data).toHaveLength(1);
    expect((await find(`&target=${made.id}&since=${new Date(before).toISOString()}`)).data).toHaveLength(3);
    expect((await find(`&target=${made.id}&until=${before}`)).data).toHaveLength(0);
    expect((await find("&actor=nobody-at-all")).data).toEqual([]);
    // The export is what the same filter finds.
    const res = await operator("GET", `/admin/v1/audit.csv?org=${gw.orgId}&target=audited`);
    expect(res.headers.get("content-type")).toBe("text/csv; charset=utf-8");
    const rows = csvRecords(await res.text());
    expect(rows.map((r) => [r.action, r.target_id, r.target_name, r.actor_login])).toEqual([
      ["key.revoked", made.id, "audited key", ""],
      ["key.blocked", made.id, "audited key", "auditor@example.com"],
      ["key.created", made.id, "audited key", "auditor@example.com"],
    ]);
    // A member reads neither; a time it cannot read is refused, naming it.
    await json("POST", "/admin/v1/users", { org: gw.orgId, login: "plain@example.com", role: "member", password: "plain-password-12" });
    const member = new WebClient(gw.relay.url);
    expect((await member.signIn("plain@example.com", "plain-password-12")).status).toBe(200);
    expect((await member.call("GET", "/admin/v1/audit.csv")).status).toBe(403);
    const bad = await operator("GET", `/admin/v1/audit?org=${gw.orgId}&since=last%20week`);
    expect([bad.status, ((await bad.json()) as { error: { param: string } }).error.param]).toEqual([400, "since"]);
  });

  it("stays bounded: each organization keeps its newest requests, and none older than the retention", async () => {
    const { store } = gw.relay;
    const org = await gw.relay.control.orgs.create(OP, { name: "Busy Org" });
    const row = (at: number, i: number) => ({ orgId: org.id, at, requestId: `r${i}`, keyId: null, model: "m", stackId: null, machineId: null, stream: false, status: 200, errorCode: null, promptTokens: 1, completionTokens: 1, latencyMs: 1, firstTokenMs: 1, loadMs: null, captureJson: null, captureUntil: null });
    const now = Date.now();
    // More than one pruning statement deletes (2,000 each).
    await store.requests.insert(Array.from({ length: 4500 }, (_, i) => row(now - 4500 + i, i)));
    await store.requests.insert([row(now - 40 * 86_400_000, 9999)]);
    expect((await store.requests.list(org.id, {}, { offset: 0, limit: 1 })).total).toBe(4501);
    expect(await store.requests.prune({ before: now - 30 * 86_400_000, keepPerOrg: 1000, orgs: [org.id], now })).toBe(3501);
    const left = await store.requests.list(org.id, {}, { offset: 0, limit: 1000 });
    expect(left.total).toBe(1000);
    // The newest thousand: r3500 … r4499.
    expect([left.rows[0]!.requestId, left.rows[999]!.requestId]).toEqual(["r4499", "r3500"]);
    // Other organizations' requests were not touched.
    expect((await log()).total).toBeGreaterThanOrEqual(10);
  });
});
