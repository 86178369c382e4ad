/**
 * A seeded generator of malformed and hostile gateway requests, every one
 * invalid by construction (so the only right answer is a 4xx).
 */
export interface HostileRequest {
  kind: string;
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string | Buffer;
  /** Send over a raw TCP socket: bytes no HTTP client library would produce. */
  raw?: Buffer;
}

/** mulberry32: a small deterministic PRNG, so a failing case can be replayed from its seed. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function generator(seed: number, ctx: { key: string; model: string }) {
  const rnd = prng(seed);
  const int = (n: number) => Math.floor(rnd() * n);
  const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)]!;
  const weird = () =>
    pick(["", " ", "\u0000", "\uFFFF", "💥".repeat(int(50)), "\uD800", "a".repeat(int(5000)), "<script>", "' OR 1=1 --", "%00", "\\u0000", "null", String(rnd())]);
  const hugeNumber = () => pick([1e308, -1e308, 2 ** 64, -(2 ** 63), Number.MAX_SAFE_INTEGER + 2, 1e-320, -0.0000001]);
  const randomValue = (depth = 0): unknown => {
    switch (int(depth > 3 ? 5 : 8)) {
      case 0:
        return null;
      case 1:
        return rnd() < 0.5;
      case 2:
        return hugeNumber();
      case 3:
        return weird();
      case 4:
        return int(1000) - 500;
      case 5:
        return Array.from({ length: int(4) }, () => randomValue(depth + 1));
      default:
        return Object.fromEntries(Array.from({ length: int(4) }, () => [weird(), randomValue(depth + 1)]));
    }
  };
  const base = () => ({ model: ctx.model, messages: [{ role: "user", content: "hi" }], max_tokens: 1 });
  const auth = { authorization: `Bearer ${ctx.key}`, "content-type": "application/json" };
  const chat = (kind: string, body: unknown, headers: Record<string, string> = auth): HostileRequest => ({
    kind,
    method: "POST",
    path: "/v1/chat/completions",
    headers,
    body: typeof body === "string" || Buffer.isBuffer(body) ? body : JSON.stringify(body),
  });
  // Values that break each parameter (wrong type or out of range).
  const BAD: Record<string, unknown[]> = {
    model: [null, 0, true, [], {}, "", "x".repeat(300)],
    messages: [null, "hi", 1, {}, [], [null], [1], [{}], [{ role: "user" }], [{ role: "robot", content: "x" }], [{ role: "user", content: 5 }], [{ role: "user", content: [{ type: "image" }] }], [{ role: "tool", content: "x" }]],
    temperature: [-0.1, 2.01, "1", true, [], 1e308, -1e308],
    top_p: [-1, 1.5, "0.5", {}],
    max_tokens: [0, -1, 1.5, "10", 2 ** 64, 1e308, 5_000_000_000, 2 ** 32, 16_777_217],
    max_completion_tokens: [0, -5, 0.5, "x", 5_000_000_000],
    n: [0, -1, 1.5, "2", 129],
    stop: [5, [1], ["a", "b", "c", "d", "e"], [""], {}, "x".repeat(2000)],
    presence_penalty: [-2.5, 3, "1"],
    frequency_penalty: [9, -9, []],
    seed: [-1, 1.5, "7", 2 ** 40],
    stream: ["true", 1, {}],
    stream_options: [{ include_usage: true }],
    logit_bias: [[], { abc: 1 }, { "1": 500 }, "x"],
    logprobs: ["yes", 1],
    top_logprobs: [5, 21, -1],
    response_format: [{ type: "xml" }, "json", []],
    tools: ["all", 1, {}],
    tool_choice: ["sometimes", 5],
    user: [5, {}, "x".repeat(2000)],
    reasoning_effort: ["extreme", 1],
  };
  // A schema fault (each one the vendor refuses), placed at a random depth of an otherwise valid schema.
  const SCHEMA_FAULTS: unknown[] = [
    { type: "nonsense" },
    { type: ["string", "string"] },
    { type: [] },
    { type: "object", required: "a" },
    { type: "object", required: [1] },
    { type: "string", maxLength: -1 },
    { type: "string", minLength: 1.5 },
    { type: "string", minLength: 3, maxLength: 1 },
    { type: "number", multipleOf: 0 },
    { type: "number", minimum: "1" },
    { type: "string", pattern: "([a" },
    { $ref: "#/$defs/missing" },
    { $ref: "http://169.254.169.254/latest/meta-data" },
    { $dynamicRef: "#node" },
    { enum: [] },
    { anyOf: [] },
    { oneOf: "string" },
    { type: "object", properties: [] },
    { type: "array", items: 5 },
    5,
    null,
    "string",
    [],
  ];
  const faultySchema = (): Record<string, unknown> => {
    let schema = pick(SCHEMA_FAULTS);
    for (let depth = int(4); depth > 0; depth--) {
      schema = pick([
        () => ({ type: "object", properties: { [weird().slice(0, 20) || "k"]: schema } }),
        () => ({ type: "array", items: schema }),
        () => ({ anyOf: [{ type: "string" }, schema] }),
      ])();
    }
    if (rnd() < 0.1) for (let i = 0; i < 11; i++) schema = { type: "object", properties: { p: schema } }; // past 10 levels
    return { type: "object", properties: { a: schema } };
  };
  // The Messages and Responses APIs, each with its own base body and the values that break its parameters.
  const post = (path: string) => (kind: string, body: unknown, headers: Record<string, string> = auth): HostileRequest => ({ ...chat(kind, body, headers), path });
  const messages = post("/v1/messages");
  const responses = post("/v1/responses");
  const messagesBase = () => ({ model: ctx.model, max_tokens: 1, messages: [{ role: "user", content: "hi" }] });
  const responsesBase = () => ({ model: ctx.model, input: "hi", max_output_tokens: 1 });
  const BAD_MESSAGES: Record<string, unknown[]> = {
    model: [null, 0, [], "", "x".repeat(300)],
    max_tokens: [null, 0, -1, 1.5, "10", 2 ** 64, 16_777_217],
    messages: [null, "hi", {}, [], [null], [{ role: "system", content: "x" }], [{ role: "user", content: 5 }], [{ role: "user", content: [{ type: "tool_result" }] }], [{ role: "assistant", content: [{ type: "tool_use", id: "t", name: "f", input: "str" }] }], [{ role: "user", content: [{ type: "image", source: { type: "file", file_id: "x" } }] }], [{ role: "user", content: [{ type: "document", source: {} }] }], [{ role: "user", content: [{ type: "tool_use", id: "t", name: "f", input: {} }] }], [{ role: "user", content: [{ type: "tool_result", tool_use_id: "nope", content: "x" }] }]],
    system: [5, {}, [{ type: "image" }], [5]],
    stop_sequences: [5, [1], [""], ["a", "b", "c", "d", "e"]],
    temperature: [-0.1, 2.5, "1"],
    top_p: [-1, 2, {}],
    top_k: [5, 40],
    tools: ["all", {}, [{ name: "f" }], [{ type: "bash_20250124", name: "bash" }], [{ name: "f", input_schema: { type: "string" } }]],
    tool_choice: ["auto", { type: "sometimes" }, { type: "tool" }, 5],
    output_config: [5, { format: { type: "xml" } }, { format: { type: "json_schema", schema: { type: "nonsense" } } }],
    container: ["c"],
    mcp_servers: [[{ url: "http://169.254.169.254" }]],
  };
  const BAD_RESPONSES: Record<string, unknown[]> = {
    model: [null, 0, [], "", "x".repeat(300)],
    input: [null, 5, {}, [], [5], [{ role: "robot", content: "x" }], [{ type: "item_reference", id: "x" }], [{ type: "function_call_output" }], [{ type: "function_call", call_id: "c", name: "f", arguments: 5 }], [{ role: "user", content: [{ type: "input_file", file_id: "f" }] }], [{ type: "function_call_output", call_id: "nope", output: "x" }], [{ role: "user", content: [{ type: "input_image" }] }]],
    instructions: [5, {}, []],
    max_output_tokens: [0, -1, "x", 2 ** 64],
    tools: ["x", [{ type: "web_search" }], [{ type: "function" }], [{ type: "function", name: "f", parameters: { type: "string" } }]],
    tool_choice: ["sometimes", { type: "file_search" }, { type: "function" }],
    text: [5, { format: { type: "xml" } }, { format: { type: "json_schema", name: "o", schema: { type: "nonsense" } } }, { format: 5 }],
    previous_response_id: ["resp_x"],
    background: [true],
    temperature: [3, "1"],
  };
  const badOf = (table: Record<string, unknown[]>, base: () => Record<string, unknown>) => () => {
    const name = pick(Object.keys(table));
    return [`bad ${name}`, { ...base(), [name]: pick(table[name]!) }] as const;
  };
  const embeddings = post("/v1/embeddings");
  const embeddingsBase = () => ({ model: ctx.model, input: "hi" });
  const BAD_EMBEDDINGS: Record<string, unknown[]> = {
    model: [null, 0, [], "", "x".repeat(300)],
    input: [null, "", 5, {}, [], [""], [5.5], [-1], [2 ** 33], [[]], [["a"]], [[1, "a"]], Array.from({ length: 2049 }, () => "a"), [[99_999_999]]],
    encoding_format: ["int8", 5, "binary"],
    dimensions: [0, -1, 1.5, "8", 70_000, 32],
    user: [5, {}],
  };
  const badEmbeddings = badOf(BAD_EMBEDDINGS, embeddingsBase);
  const rerank = post("/v1/rerank");
  const rerankBase = () => ({ model: ctx.model, query: "hi", documents: ["a", "b"] });
  const BAD_RERANK: Record<string, unknown[]> = {
    model: [null, 0, [], "", "x".repeat(300)],
    query: [null, "", " ", 5, {}, ["hi"], "q".repeat(40_000)],
    documents: [null, "a", 5, {}, [], [5], [null], [{}], [{ text: 5 }], [{ text: "a", id: 1 }], Array.from({ length: 1001 }, () => "a")],
    top_n: [-1, 1.5, "2", {}],
    return_documents: ["yes", 1, {}],
    max_chunks_per_doc: [1, 10],
    rank_fields: [["text"]],
    user: [5, {}],
  };
  const badRerank = badOf(BAD_RERANK, rerankBase);
  const badMessages = badOf(BAD_MESSAGES, messagesBase);
  const badResponses = badOf(BAD_RESPONSES, responsesBase);
  const makers: (() => HostileRequest)[] = [
    () => messages(...badMessages()),
    () => messages(...badMessages()),
    () => messages("bad tool schema", { ...messagesBase(), tools: [{ name: "f", input_schema: faultySchema() }] }),
    () => messages("unknown parameter", { ...messagesBase(), [`x_${weird().slice(0, 30)}${int(1e6)}`]: randomValue() }),
    () => messages("random object", Object.fromEntries(Array.from({ length: 1 + int(5) }, () => [weird() || "k", randomValue()]))),
    () => messages("unknown model", { ...messagesBase(), model: `no-such-${int(1e9)}` }),
    () => messages("bad key", messagesBase(), { "content-type": "application/json", "x-api-key": pick(["", "sk-ant-x", `mk_live_${int(1e9)}`, "x".repeat(4000)]) }),
    () => messages("prototype key", `{"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","__proto__":{"admin":true}}]}],"model":"${ctx.model}","max_tokens":1}`),
    () => responses(...badResponses()),
    () => responses(...badResponses()),
    () => responses("bad tool schema", { ...responsesBase(), tools: [{ type: "function", name: "f", parameters: faultySchema() }] }),
    () => responses("unknown parameter", { ...responsesBase(), [`x_${weird().slice(0, 30)}${int(1e6)}`]: randomValue() }),
    () => responses("random object", Object.fromEntries(Array.from({ length: 1 + int(5) }, () => [weird() || "k", randomValue()]))),
    () => responses("unknown model", { ...responsesBase(), model: `no-such-${int(1e9)}` }),
    () => responses("prototype key", `{"input":[{"role":"user","content":[{"type":"input_text","text":"hi","constructor":{"prototype":{}}}]}],"model":"${ctx.model}","max_output_tokens":1}`),
    () => embeddings(...badEmbeddings()),
    () => embeddings(...badEmbeddings()),
    () => embeddings("unknown parameter", { ...embeddingsBase(), [`x_${weird().slice(0, 30)}${int(1e6)}`]: randomValue() }),
    () => embeddings("random object", Object.fromEntries(Array.from({ length: 1 + int(5) }, () => [weird() || "k", randomValue()]))),
    () => embeddings("prototype key", `{"input":[{"__proto__":{"admin":true}}],"model":"${ctx.model}"}`),
    () => rerank(...badRerank()),
    () => rerank("unknown parameter", { ...rerankBase(), [`x_${weird().slice(0, 30)}${int(1e6)}`]: randomValue() }),
    () => rerank("prototype key", `{"query":"hi","documents":[{"__proto__":{"admin":true}}],"model":"${ctx.model}"}`),
    () => responses("malformed JSON", pick(['{"input":', "{'a': 1}", '{"model":"m",}', "NaN"])),
    () => chat("bad tool schema", { ...base(), tools: [{ type: "function", function: { name: "f", parameters: faultySchema() } }], tool_choice: pick(["auto", "required"]) }),
    () => chat("bad response schema", { ...base(), response_format: { type: "json_schema", json_schema: { name: "out", schema: faultySchema(), strict: rnd() < 0.5 } } }),
    () => chat("non-object body", pick([null, 1, "str", [1, 2], true, []])),
    () => {
      const name = pick(Object.keys(BAD));
      const body: Record<string, unknown> = { ...base(), [name]: pick(BAD[name]!) };
      if (name === "stream_options") body.stream = false;
      return chat(`bad ${name}`, body);
    },
    () => chat("unknown parameter", { ...base(), [`x_${weird().slice(0, 30)}${int(1e6)}`]: randomValue() }),
    () => chat("random object", Object.fromEntries(Array.from({ length: 1 + int(5) }, () => [weird() || "k", randomValue()]))),
    () => {
      // Keys that name JavaScript's object model, at the top or deeper, plainly or escaped: written as JSON text,
      // since an object literal's __proto__ would set a prototype rather than a key.
      const key = pick(['"__proto__"', '"constructor"', '"prototype"', '"\\u005f_proto__"', '"construct\\u006fr"']);
      const value = JSON.stringify(pick([{}, { admin: true }, [], null, 1, "x", { prototype: { polluted: true } }]));
      const text = JSON.stringify(base());
      const where = pick(["top", "message", "content part", "stream_options", "logit_bias"]);
      const body =
        where === "top"
          ? `{${key}:${value},${text.slice(1)}`
          : where === "message"
            ? text.replace('{"role":"user"', `{${key}:${value},"role":"user"`)
            : where === "content part"
              ? text.replace('"content":"hi"', `"content":[{"type":"text","text":"hi",${key}:${value}}]`)
              : where === "stream_options"
                ? `{"stream":true,"stream_options":{${key}:${value}},${text.slice(1)}`
                : `{"logit_bias":{${key}:${value}},${text.slice(1)}`;
      return chat(`prototype key ${key} (${where})`, body);
    },
    () => chat("inherited name as a parameter", `{"${pick(["toString", "hasOwnProperty", "valueOf", "isPrototypeOf", "__defineGetter__"])}":${JSON.stringify(randomValue())},${JSON.stringify(base()).slice(1)}`),
    () => chat("unknown model", { ...base(), model: `no-such-${int(1e9)}-${weird().slice(0, 20)}` }),
    () => {
      const depth = 1 + int(200_000);
      return chat("deep nesting", rnd() < 0.5 ? "[".repeat(depth) + "]".repeat(depth) : `{"model":"${ctx.model}","messages":${"[".repeat(depth)}${"]".repeat(depth)}}`);
    },
    () => chat("deep nesting in content", { ...base(), messages: [{ role: "user", content: JSON.parse("[".repeat(500) + "]".repeat(500)) }] }),
    () => chat("malformed JSON", pick(['{"model":', "{'a': 1}", '{"model":"m",}', "{", "NaN", '{"a":1}{"b":2}', "\u0000", '{"model":"\\ud800"', "[".repeat(10)])),
    () => {
      const valid = Buffer.from(JSON.stringify(base()));
      const bad = Buffer.from(pick([[0xff], [0xc3, 0x28], [0xe2, 0x82], [0xf0, 0x90, 0x80], [0xed, 0xa0, 0x80]]));
      const at = valid.indexOf('"hi"') + 1;
      return chat("invalid UTF-8", Buffer.concat([valid.subarray(0, at), bad, valid.subarray(at)]));
    },
    () => chat("wrong content type", JSON.stringify(base()), { ...auth, "content-type": pick(["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/xml", "image/png"]) }),
    () => chat("unsupported charset", JSON.stringify(base()), { ...auth, "content-type": "application/json; charset=" + pick(["utf-16", "latin1", "ebcdic", "x-unknown"]) }),
    () => chat("bogus content encoding", Buffer.from([1, 2, 3, 4]), { ...auth, "content-encoding": pick(["gzip", "deflate", "br", "x-evil"]) }),
    () => chat("missing key", base(), { "content-type": "application/json" }),
    () => chat("bad key", base(), { "content-type": "application/json", authorization: pick(["Bearer", "Bearer ", "Basic Zm9vOmJhcg==", `Bearer mk_live_${int(1e9)}`, `bearer ${"x".repeat(4000)}`, "Token abc", `Bearer ${ctx.key} extra`]) }),
    () => ({ kind: "unknown path", method: pick(["GET", "POST", "PUT", "DELETE", "PATCH"]), path: pick(["/v1", "/v2/chat/completions", `/v1/${int(1e6)}`, "/v1/chat/completions/x", "/v1/%E0%A4%A", "/v1/..%2F..%2Fetc%2Fpasswd", "/admin/v1/stacks/%FF", "/v1/models/%"]), headers: auth }),
    () => ({ kind: "wrong method", method: pick(["GET", "PUT", "DELETE", "PATCH"]), path: "/v1/chat/completions", headers: auth }),
    () => ({ kind: "legacy completions", method: "POST", path: "/v1/completions", headers: auth, body: JSON.stringify({ model: ctx.model, prompt: "hi" }) }),
    () => ({ kind: "admin without token", method: pick(["GET", "POST"]), path: pick(["/admin/v1/orgs", "/admin/v1/keys?org=x", "/admin/v1/stacks/%FF/deploy"]), headers: { authorization: `Bearer ${ctx.key}`, "content-type": "application/json" }, body: "{}" }),
    () => {
      const line = pick(["GARBAGE\r\n\r\n", "GET /v1/models HTTP/9.9\r\n\r\n", "POST /v1/chat/completions HTTP/1.1\r\nContent-Length: -1\r\n\r\n", "GET / HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n", "\x00\x01\x02\r\n\r\n"]);
      return { kind: "malformed HTTP", method: "", path: "", headers: {}, raw: Buffer.from(line, "latin1") };
    },
    () => ({
      kind: "oversized headers",
      method: "",
      path: "",
      headers: {},
      raw: Buffer.from(`GET /v1/models HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(20_000 + int(20_000))}\r\n\r\n`, "latin1"),
    }),
    () => ({ kind: "odd header bytes", method: "", path: "", headers: {}, raw: Buffer.concat([Buffer.from("GET /v1/models HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \xff\xfe\r\n\r\n", "latin1")]) }),
  ];
  return {
    next: (): HostileRequest => pick(makers)(),
    /** A body of `mib` MiB (a single huge string in an otherwise valid request). */
    huge: (mib: number): HostileRequest => chat("5 MiB string", { ...base(), messages: [{ role: "user", content: "x".repeat(mib * 1024 * 1024) }] }),
  };
}
