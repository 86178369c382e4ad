import { MakinaError, type ChatMessage, type ContentPart } from "../../../proto/index.js";
import { checkChatRequest, integer, MAX_COMPLETION_TOKENS, type ChatDraft, type ChatRequest, type DraftResponseFormat, type DraftTool, type DraftToolChoice, type MessagePlace, type Named } from "../chat/index.js";
import { array, boolean, either, imagePart, modelOf, number, object, oneOf, string, toolCallOf, type ValueCheck } from "../chat/index.js";
import { describeValue, isPlainObject, onlyKeys, refuse } from "../json-values.js";
import type { AskedTier } from "../../routing/index.js";

/** The service tiers a request of OpenAI's APIs may ask: `auto` is its key's. */
export const OPENAI_TIERS = ["auto", "default", "flex", "priority"];

const { invalid, missing, unknown } = refuse;

const ROLES = new Set(["system", "developer", "user", "assistant", "tool"]);

/** A parameter of the vendor interface beyond the basics: how to check its type, and which values change nothing. */
interface Rule {
  check: ValueCheck;
  neutral: (v: unknown) => boolean;
}

const always = () => true;

/**
 * Every other documented request parameter of the vendor chat-completions interface. Those of the domain
 * (penalties, tools, tool choice, response format) are checked further by {@link checkChatRequest}; a value
 * of the others that is not neutral is a need the stack's runtime must honour.
 */
const RULES: Record<string, Rule> = {
  n: { check: integer(1, 128), neutral: (v) => v === 1 },
  presence_penalty: { check: number(-2, 2), neutral: always },
  frequency_penalty: { check: number(-2, 2), neutral: always },
  logprobs: { check: boolean, neutral: (v) => v === false },
  top_logprobs: { check: integer(0, 20), neutral: (v) => v === 0 },
  logit_bias: {
    check: (v, name) => {
      object(v, name);
      for (const [token, bias] of Object.entries(v as Record<string, unknown>)) {
        if (!/^\d+$/.test(token)) throw invalid(name, `Invalid '${name}': keys must be token ids, got '${token.slice(0, 40)}'.`);
        number(-100, 100)(bias, `${name}.${token}`);
      }
    },
    neutral: (v) => Object.keys(v as object).length === 0,
  },
  response_format: { check: object, neutral: always },
  tools: { check: array, neutral: always },
  tool_choice: { check: either(oneOf("none", "auto", "required"), object), neutral: always },
  parallel_tool_calls: { check: boolean, neutral: always },
  functions: { check: array, neutral: (v) => (v as unknown[]).length === 0 },
  function_call: { check: either(oneOf("none", "auto"), object), neutral: (v) => v === "none" || v === "auto" },
  store: { check: boolean, neutral: (v) => v === false },
  metadata: { check: object, neutral: always },
  // Its order in the queues (the plan checks it against the key's): no runtime has to honour it.
  service_tier: { check: oneOf(...OPENAI_TIERS), neutral: always },
  modalities: { check: array, neutral: (v) => JSON.stringify(v) === '["text"]' },
  audio: { check: object, neutral: () => false },
  prediction: { check: object, neutral: () => false },
  reasoning_effort: { check: oneOf("minimal", "low", "medium", "high"), neutral: () => false },
  web_search_options: { check: object, neutral: () => false },
  verbosity: { check: oneOf("low", "medium", "high"), neutral: (v) => v === "medium" },
  prompt_cache_key: { check: string(1024), neutral: always },
  safety_identifier: { check: string(1024), neutral: always },
  user: { check: string(1024), neutral: always },
};

const CORE = new Set(["model", "messages", "stream", "stream_options", "temperature", "top_p", "max_tokens", "max_completion_tokens", "stop", "seed"]);

/** An `image_url` part: `{url, detail?}`. */
function imageUrlPart(part: Record<string, unknown>, p: string): ContentPart {
  const image = part.image_url;
  if (image === undefined || image === null) throw missing(`${p}.image_url`);
  if (!isPlainObject(image)) throw invalid(`${p}.image_url`, `Invalid type for '${p}.image_url': expected an object, but got ${describeValue(image)}.`);
  if (typeof image.url !== "string") throw missing(`${p}.image_url.url`);
  return imagePart(image.url, image.detail, { url: `${p}.image_url.url`, detail: `${p}.image_url.detail` });
}

/**
 * A message's content: its text (parts joined), and its parts in order when one is an image (only a user
 * message may have one). `images` collects where each image part is.
 */
function messageContent(m: Record<string, unknown>, i: number, images: string[]): { content: string; parts?: ContentPart[] } {
  const param = `messages[${i}].content`;
  const c = m.content;
  if (typeof c === "string") return { content: c };
  if ((c === null || c === undefined) && m.role === "assistant") return { content: "" };
  if (c === undefined || c === null) throw missing(param);
  if (!Array.isArray(c)) throw invalid(param, `Invalid type for '${param}': expected a string or an array of content parts, but got ${describeValue(c)}.`);
  if (c.length === 0) throw invalid(param, `Invalid '${param}': empty array. Expected an array with minimum length 1.`);
  const parts = c.map((part: unknown, j): ContentPart => {
    const p = `${param}[${j}]`;
    if (!isPlainObject(part)) throw invalid(p, `Invalid type for '${p}': expected an object, but got ${describeValue(part)}.`);
    if (part.type === "text") {
      if (typeof part.text !== "string") throw invalid(`${p}.text`, `Invalid type for '${p}.text': expected a string, but got ${describeValue(part.text)}.`);
      return { type: "text", text: part.text, imageUrl: "", detail: "" };
    }
    if (part.type === "image_url") {
      if (m.role !== "user") throw invalid(`${p}.type`, `Invalid value for '${p}.type': images are only allowed in user messages.`);
      images.push(`${p}.type`);
      return imageUrlPart(part, p);
    }
    if (typeof part.type === "string" && ["input_audio", "file", "refusal"].includes(part.type)) {
      throw new MakinaError("unsupported_parameter", `Content parts of type '${part.type}' are not supported by this model's runtime.`, { param: `${p}.type` });
    }
    throw invalid(`${p}.type`, `Invalid value for '${p}.type': expected one of 'text', 'image_url', 'input_audio', 'file', 'refusal'.`);
  });
  const content = parts.map((part) => part.text).join("");
  return parts.some((part) => part.type === "image_url") ? { content, parts } : { content };
}

/** An assistant message's `tool_calls`: `[{id, type: "function", function: {name, arguments}}]`. */
function messageToolCalls(v: unknown, i: number) {
  const p = `messages[${i}].tool_calls`;
  if (!Array.isArray(v)) throw invalid(p, `Invalid type for '${p}': expected an array.`);
  return v.map((c: unknown, j) => {
    const cp = `${p}[${j}]`;
    if (!isPlainObject(c)) throw invalid(cp, `Invalid type for '${cp}': expected an object.`);
    if (c.type !== undefined && c.type !== "function") throw invalid(`${cp}.type`, `Invalid value for '${cp}.type': expected 'function'.`);
    if (!isPlainObject(c.function)) throw missing(`${cp}.function`);
    return toolCallOf({ id: c.id, name: c.function.name, arguments: c.function.arguments }, { id: `${cp}.id`, name: `${cp}.function.name`, arguments: `${cp}.function.arguments` });
  });
}

function decodeMessages(value: unknown, images: string[], places: MessagePlace[]): ChatMessage[] {
  if (value === undefined || value === null) throw missing("messages");
  if (!Array.isArray(value)) throw invalid("messages", `Invalid type for 'messages': expected an array, but got ${describeValue(value)}.`);
  return value.map((m: unknown, i): ChatMessage => {
    const at = `messages[${i}]`;
    if (!isPlainObject(m)) throw invalid(at, `Invalid type for '${at}': expected an object, but got ${describeValue(m)}.`);
    if (m.role === undefined || m.role === null) throw missing(`${at}.role`);
    if (typeof m.role !== "string" || !ROLES.has(m.role)) throw invalid(`${at}.role`, `Invalid value for '${at}.role': expected one of 'system', 'developer', 'user', 'assistant', 'tool'.`);
    if (m.name !== undefined && m.name !== null) string(256)(m.name, `${at}.name`);
    places.push(m.role === "tool" ? { at, callId: `${at}.tool_call_id` } : { at });
    if (m.role === "tool") {
      if (typeof m.tool_call_id !== "string") throw missing(`${at}.tool_call_id`);
      return { role: m.role, content: messageContent(m, i, images).content, toolCallId: m.tool_call_id };
    }
    if (m.role === "assistant" && m.tool_calls !== undefined && m.tool_calls !== null) {
      const toolCalls = messageToolCalls(m.tool_calls, i);
      if (toolCalls.length) return { role: m.role, content: messageContent(m, i, images).content, toolCalls };
    }
    return { role: m.role, ...messageContent(m, i, images) };
  });
}

/** `tools`: `[{type: "function", function: {name, description?, parameters?, strict?}}]`, their values left to the domain's check. */
function decodeTools(list: unknown[]): DraftTool[] {
  return list.map((v, i) => {
    const p = `tools[${i}]`;
    if (!isPlainObject(v)) throw invalid(p, `Invalid type for '${p}': expected an object.`);
    onlyKeys(v, p, ["type", "function"]);
    if (v.type === undefined || v.type === null) throw missing(`${p}.type`);
    if (v.type !== "function") throw invalid(`${p}.type`, `Invalid value for '${p}.type': expected 'function'.`);
    if (v.function === undefined || v.function === null) throw missing(`${p}.function`);
    if (!isPlainObject(v.function)) throw invalid(`${p}.function`, `Invalid type for '${p}.function': expected an object.`);
    const f = v.function;
    const fp = `${p}.function`;
    onlyKeys(f, fp, ["name", "description", "parameters", "strict"]);
    return { name: { value: f.name, name: `${fp}.name` }, description: { value: f.description, name: `${fp}.description` }, parameters: { value: f.parameters, name: `${fp}.parameters` }, strict: { value: f.strict, name: `${fp}.strict` } };
  });
}

/** `tool_choice`: `none`, `auto`, `required`, or `{type: "function", function: {name}}`. */
function decodeToolChoice(choice: unknown): DraftToolChoice | undefined {
  if (choice === undefined || choice === null) return undefined;
  if (typeof choice === "string") return { mode: choice as "none" | "auto" | "required" };
  const c = choice as Record<string, unknown>;
  onlyKeys(c, "tool_choice", ["type", "function"]);
  if (c.type !== "function") throw invalid("tool_choice.type", "Invalid value for 'tool_choice.type': expected 'function'.");
  if (!isPlainObject(c.function)) throw missing("tool_choice.function");
  onlyKeys(c.function, "tool_choice.function", ["name"]);
  if (typeof c.function.name !== "string") throw missing("tool_choice.function.name");
  return { mode: "function", function: c.function.name, functionName: "tool_choice.function.name" };
}

/** `response_format`: `{type}`, with `json_schema: {name, description?, schema?, strict?}` for a schema. */
function decodeResponseFormat(v: unknown): DraftResponseFormat | undefined {
  if (v === undefined || v === null) return undefined;
  const rf = v as Record<string, unknown>;
  const name = "response_format";
  oneOf("text", "json_object", "json_schema")(rf.type, `${name}.type`);
  for (const k of Object.keys(rf)) if (k !== "type" && !(k === "json_schema" && rf.type === "json_schema")) throw unknown(`${name}.${k.slice(0, 64)}`);
  const p = `${name}.json_schema`;
  let js: Record<string, unknown> = {};
  if (rf.type === "json_schema") {
    if (rf.json_schema === undefined || rf.json_schema === null) throw missing(p);
    object(rf.json_schema, p);
    js = rf.json_schema as Record<string, unknown>;
    onlyKeys(js, p, ["name", "description", "schema", "strict"]);
  }
  const part = (k: string) => ({ value: js[k], name: `${p}.${k}` });
  return { name, type: { value: rf.type, name: `${name}.type` }, schemaName: part("name"), description: part("description"), schema: part("schema"), strict: part("strict") };
}

/** `stream_options`: only with `stream`, `{include_usage?, include_obfuscation?}`; whether the stream ends with its usage. */
function includeUsage(body: Record<string, unknown>): boolean {
  const so = body.stream_options;
  if (so === undefined || so === null) return false;
  if (body.stream !== true) throw invalid("stream_options", "Invalid 'stream_options': only allowed when 'stream' is true.");
  object(so, "stream_options");
  for (const [k, v] of Object.entries(so as Record<string, unknown>)) {
    if (k !== "include_usage" && k !== "include_obfuscation") throw unknown(`stream_options.${k.slice(0, 256)}`);
    if (v !== null && v !== undefined) boolean(v, `stream_options.${k}`);
  }
  return (so as Record<string, unknown>).include_usage === true;
}

const named = (body: Record<string, unknown>, name: string): Named => ({ value: body[name], name });

/**
 * Reads a chat-completions body (the vendor interface: its parameters, messages, tools and response format) and
 * makes it the gateway's domain request through the one check of chat requests.
 */
export function decodeChatRequest(body: unknown): ChatRequest {
  if (!isPlainObject(body)) throw refuse.notObject(body);
  const needs: Named<string>[] = [];
  for (const [name, value] of Object.entries(body)) {
    if (CORE.has(name)) continue;
    const rule = Object.hasOwn(RULES, name) ? RULES[name] : undefined;
    if (!rule) throw unknown(name.slice(0, 256));
    if (value === null || value === undefined) continue;
    rule.check(value, name);
    if (!rule.neutral(value)) needs.push({ value: name, name });
  }
  if (body.top_logprobs !== undefined && body.top_logprobs !== null && body.top_logprobs !== 0 && body.logprobs !== true) {
    throw invalid("top_logprobs", "Invalid 'top_logprobs': only allowed when 'logprobs' is true.");
  }
  const model = modelOf(body.model, "model");
  const images: string[] = [];
  const places: MessagePlace[] = [];
  const messages = decodeMessages(body.messages, images, places);
  const stream = body.stream === undefined || body.stream === null ? false : (boolean(body.stream, "stream"), body.stream as boolean);
  // `max_completion_tokens` is the newer name of `max_tokens`: the first one given counts; both are checked.
  const given = (name: string) => body[name] !== undefined && body[name] !== null;
  if (given("max_completion_tokens") && given("max_tokens")) integer(1, MAX_COMPLETION_TOKENS)(body.max_tokens, "max_tokens");
  const draft: ChatDraft = {
    model,
    modelName: "model",
    messages,
    places,
    messagesName: "messages",
    images,
    stream,
    includeUsage: includeUsage(body),
    temperature: named(body, "temperature"),
    topP: named(body, "top_p"),
    maxTokens: named(body, given("max_completion_tokens") ? "max_completion_tokens" : "max_tokens"),
    seed: named(body, "seed"),
    stop: named(body, "stop"),
    presencePenalty: named(body, "presence_penalty"),
    frequencyPenalty: named(body, "frequency_penalty"),
    tools: { value: decodeTools(Array.isArray(body.tools) ? body.tools : []), name: "tools" },
    toolChoice: { value: decodeToolChoice(body.tool_choice), name: "tool_choice" },
    parallelToolCalls: named(body, "parallel_tool_calls"),
    needs,
  };
  const format = decodeResponseFormat(body.response_format);
  const request: ChatRequest = checkChatRequest(format ? { ...draft, responseFormat: format } : draft);
  if (body.service_tier !== undefined && body.service_tier !== null) request.serviceTier = body.service_tier as AskedTier;
  const cacheKey = cacheKeyOf(body.prompt_cache_key, body.user);
  if (cacheKey) request.cacheKey = cacheKey;
  return request;
}

/** The first of the client's words for requests that share a prompt that is a string (`prompt_cache_key`, then `user`), cut to 1,024 characters. */
export function cacheKeyOf(...given: unknown[]): string | undefined {
  const key = given.find((v): v is string => typeof v === "string" && v !== "");
  return key?.slice(0, 1024);
}
