import { MakinaError, type ChatInput, type ChatMessage, type ContentPart, type ResponseFormat } from "../../../proto/index.js";
import { describeValue, isPlainObject } from "../json-values.js";
import { validateJsonSchema } from "./validate-json-schema.js";
import { checkToolTurns, messageToolCalls, validateTools } from "./validate-tools.js";

/**
 * A validated chat-completions request, in the gateway's terms: what routing and the answer read, and the
 * `input` the stack's runtime gets, built here once and carried to the agent as it is.
 */
export interface ChatRequest {
  model: string;
  /** `stream_options.include_usage`. */
  includeUsage: boolean;
  /** Where the first image part is (`messages[i].content[j].type`); undefined when the request has none. */
  imagePart: string | undefined;
  /**
   * Parameters given with a value that changes the output beyond the basics
   * (for example `presence_penalty: 0.5`, `n: 2`). The stack's runtime must
   * honour each of them, or the request is refused with `unsupported_parameter`.
   */
  needs: string[];
  /**
   * The request as the runtime takes it: `maxTokens` 0 when the client set none (what is left of the context),
   * `unset` the sampling parameters it left to their defaults (a harness may set its own), `responseFormat` only
   * beyond free text, and `tools`, `toolChoice`, `toolChoiceFunction`, `parallelToolCalls` only with tools.
   */
  input: ChatInput;
}

/** Most stop sequences a request may give (the vendor's limit). */
const MAX_STOP = 4;

const ROLES = new Set(["system", "developer", "user", "assistant", "tool"]);

const invalid = (param: string, message: string) => new MakinaError("invalid_value", message, { param });

const describe = describeValue;

const number = (min: number, max: number) => (v: unknown, name: string) => {
  if (typeof v !== "number" || !Number.isFinite(v)) throw invalid(name, `Invalid type for '${name}': expected a number, but got ${describe(v)}.`);
  if (v < min || v > max) throw invalid(name, `Invalid '${name}': ${v} is outside the range ${min} to ${max}.`);
};
const integer = (min: number, max: number) => (v: unknown, name: string) => {
  if (typeof v !== "number" || !Number.isInteger(v)) throw invalid(name, `Invalid type for '${name}': expected an integer, but got ${describe(v)}.`);
  if (v < min || v > max) throw invalid(name, `Invalid '${name}': ${v} is outside the range ${min} to ${max}.`);
};
const boolean = (v: unknown, name: string) => {
  if (typeof v !== "boolean") throw invalid(name, `Invalid type for '${name}': expected a boolean, but got ${describe(v)}.`);
};
const string = (maxLength: number) => (v: unknown, name: string) => {
  if (typeof v !== "string") throw invalid(name, `Invalid type for '${name}': expected a string, but got ${describe(v)}.`);
  if (v.length > maxLength) throw invalid(name, `Invalid '${name}': longer than ${maxLength} characters.`);
};
const oneOf = (...values: string[]) => (v: unknown, name: string) => {
  if (typeof v !== "string" || !values.includes(v)) throw invalid(name, `Invalid value for '${name}': expected one of ${values.map((x) => `'${x}'`).join(", ")}.`);
};
const object = (v: unknown, name: string) => {
  if (!isPlainObject(v)) throw invalid(name, `Invalid type for '${name}': expected an object, but got ${describe(v)}.`);
};
const array = (v: unknown, name: string) => {
  if (!Array.isArray(v)) throw invalid(name, `Invalid type for '${name}': expected an array, but got ${describe(v)}.`);
};
const either =
  (...checks: ((v: unknown, name: string) => void)[]) =>
  (v: unknown, name: string) => {
    const errors: unknown[] = [];
    for (const c of checks) {
      try {
        return c(v, name);
      } catch (e) {
        errors.push(e);
      }
    }
    throw errors[0];
  };

/** A parameter of the vendor interface beyond the basics: how to check it, and which values change nothing. */
interface Rule {
  check: (v: unknown, name: string) => void;
  neutral: (v: unknown) => boolean;
}

const always = () => true;

/** Every other documented request parameter of the vendor chat-completions interface. */
const RULES: Record<string, Rule> = {
  n: { check: integer(1, 128), neutral: (v) => v === 1 },
  presence_penalty: { check: number(-2, 2), neutral: (v) => v === 0 },
  frequency_penalty: { check: number(-2, 2), neutral: (v) => v === 0 },
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
  // Checked whole (and read) once, by responseFormat() below.
  response_format: { check: object, neutral: (v) => (v as Record<string, unknown>).type === "text" },
  tools: { check: array, neutral: (v) => (v as unknown[]).length === 0 },
  tool_choice: { check: either(oneOf("none", "auto", "required"), object), neutral: (v) => v === "none" || v === "auto" },
  parallel_tool_calls: { check: boolean, neutral: always },
  functions: { check: array, neutral: (v) => (v as unknown[]).length === 0 },
  function_call: { check: either(oneOf("none", "auto"), object), neutral: (v) => v === "none" || v === "auto" },
  store: { check: boolean, neutral: (v) => v === false },
  metadata: { check: object, neutral: always },
  service_tier: { check: string(32), neutral: (v) => v === "auto" || v === "default" },
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

/** Largest JSON schema accepted in `response_format`, as JSON text. */
const MAX_SCHEMA_CHARS = 64 * 1024;

/** Reads `response_format`: text (undefined), any JSON object, or JSON following a schema. */
function responseFormat(v: unknown, name: string): ResponseFormat | undefined {
  object(v, name);
  const rf = v as Record<string, unknown>;
  oneOf("text", "json_object", "json_schema")(rf.type, `${name}.type`);
  for (const k of Object.keys(rf)) {
    if (k !== "type" && !(k === "json_schema" && rf.type === "json_schema")) throw new MakinaError("unknown_parameter", `Unrecognized request argument supplied: ${name}.${k.slice(0, 64)}`, { param: `${name}.${k.slice(0, 64)}` });
  }
  if (rf.type === "text") return undefined;
  if (rf.type === "json_object") return { type: "json_object", name: "", schemaJson: "", strict: false };
  const p = `${name}.json_schema`;
  if (rf.json_schema === undefined || rf.json_schema === null) throw new MakinaError("missing_required_parameter", `Missing required parameter: '${p}'.`, { param: p });
  object(rf.json_schema, p);
  const js = rf.json_schema as Record<string, unknown>;
  for (const k of Object.keys(js)) {
    if (!["name", "description", "schema", "strict"].includes(k)) throw new MakinaError("unknown_parameter", `Unrecognized request argument supplied: ${p}.${k.slice(0, 64)}`, { param: `${p}.${k.slice(0, 64)}` });
  }
  if (js.name === undefined || js.name === null) throw new MakinaError("missing_required_parameter", `Missing required parameter: '${p}.name'.`, { param: `${p}.name` });
  if (typeof js.name !== "string" || !/^[A-Za-z0-9_-]{1,64}$/.test(js.name)) throw invalid(`${p}.name`, `Invalid '${p}.name': 1 to 64 letters, digits, underscores or dashes.`);
  if (js.description !== undefined && js.description !== null) string(4096)(js.description, `${p}.description`);
  if (js.strict !== undefined && js.strict !== null) boolean(js.strict, `${p}.strict`);
  const schema = js.schema ?? {};
  object(schema, `${p}.schema`);
  const schemaJson = JSON.stringify(schema);
  if (schemaJson.length > MAX_SCHEMA_CHARS) throw invalid(`${p}.schema`, `Invalid '${p}.schema': larger than ${MAX_SCHEMA_CHARS} characters as JSON.`);
  // A response format is held to its schema by a grammar or guided decoding, strict or not: the vendor's limits hold.
  validateJsonSchema(schema, `${p}.schema`, { strict: true });
  return { type: "json_schema", name: js.name, schemaJson, strict: js.strict === true };
}

const CORE = new Set(["model", "messages", "stream", "stream_options", "temperature", "top_p", "max_tokens", "max_completion_tokens", "stop", "seed"]);

function optional<T>(body: Record<string, unknown>, name: string, check: (v: unknown, name: string) => void, fallback: T): T {
  const v = body[name];
  if (v === undefined || v === null) return fallback;
  check(v, name);
  return v as T;
}

/** Longest image URL taken (a `data:` URI carries the image itself: 20 MiB of base64 at most). */
const MAX_IMAGE_URL_CHARS = 20 * 1024 * 1024;

/** An `image_url` part: `{url, detail?}`, the URL `https://`/`http://` or a `data:image/…;base64,` URI. */
function imagePart(part: Record<string, unknown>, p: string): ContentPart {
  const image = part.image_url;
  if (image === undefined || image === null) throw new MakinaError("missing_required_parameter", `Missing required parameter: '${p}.image_url'.`, { param: `${p}.image_url` });
  if (!isPlainObject(image)) throw invalid(`${p}.image_url`, `Invalid type for '${p}.image_url': expected an object, but got ${describe(image)}.`);
  const { url, detail } = image;
  if (typeof url !== "string") throw new MakinaError("missing_required_parameter", `Missing required parameter: '${p}.image_url.url'.`, { param: `${p}.image_url.url` });
  if (url.length > MAX_IMAGE_URL_CHARS || !/^(https?:\/\/\S+|data:image\/[a-z0-9.+-]+;base64,[A-Za-z0-9+/=\s]+)$/i.test(url)) {
    throw invalid(`${p}.image_url.url`, `Invalid '${p}.image_url.url': expected an http(s) URL or a data:image/…;base64 URI of at most ${MAX_IMAGE_URL_CHARS} characters.`);
  }
  if (detail !== undefined && detail !== null) oneOf("auto", "low", "high")(detail, `${p}.image_url.detail`);
  return { type: "image_url", text: "", imageUrl: url, detail: typeof detail === "string" ? detail : "" };
}

/**
 * A message's content: its text (parts joined), and its parts in order when one is an image (only a user
 * message may have one). `images` collects where each image part is, for the runtime check.
 */
function messageContent(m: Record<string, unknown>, i: number, images: string[]): { content: string; parts?: ContentPart[] } {
  const param = `messages[${i}].content`;
  const c = m.content;
  if (typeof c === "string") return { content: c };
  if ((c === null || c === undefined) && m.role === "assistant") return { content: "" };
  if (c === undefined || c === null) throw new MakinaError("missing_required_parameter", `Missing required parameter: '${param}'.`, { param });
  if (!Array.isArray(c)) throw invalid(param, `Invalid type for '${param}': expected a string or an array of content parts, but got ${describe(c)}.`);
  if (c.length === 0) throw invalid(param, `Invalid '${param}': empty array. Expected an array with minimum length 1.`);
  const parts = c.map((part: unknown, j): ContentPart => {
    const p = `${param}[${j}]`;
    if (!isPlainObject(part)) throw invalid(p, `Invalid type for '${p}': expected an object, but got ${describe(part)}.`);
    if (part.type === "text") {
      if (typeof part.text !== "string") throw invalid(`${p}.text`, `Invalid type for '${p}.text': expected a string, but got ${describe(part.text)}.`);
      return { type: "text", text: part.text, imageUrl: "", detail: "" };
    }
    if (part.type === "image_url") {
      if (m.role !== "user") throw invalid(`${p}.type`, `Invalid value for '${p}.type': images are only allowed in user messages.`);
      images.push(`${p}.type`);
      return imagePart(part, p);
    }
    if (typeof part.type === "string" && ["input_audio", "file", "refusal"].includes(part.type)) {
      throw new MakinaError("unsupported_parameter", `Content parts of type '${part.type}' are not supported by this model's runtime.`, { param: `${p}.type` });
    }
    throw invalid(`${p}.type`, `Invalid value for '${p}.type': expected one of 'text', 'image_url', 'input_audio', 'file', 'refusal'.`);
  });
  const content = parts.map((part) => part.text).join("");
  return parts.some((part) => part.type === "image_url") ? { content, parts } : { content };
}

function validateMessages(value: unknown, images: string[]): ChatMessage[] {
  if (value === undefined || value === null) throw new MakinaError("missing_required_parameter", "Missing required parameter: 'messages'.", { param: "messages" });
  if (!Array.isArray(value)) throw invalid("messages", `Invalid type for 'messages': expected an array, but got ${describe(value)}.`);
  if (value.length === 0) throw invalid("messages", "Invalid 'messages': empty array. Expected an array with minimum length 1.");
  return value.map((m: unknown, i): ChatMessage => {
    if (!isPlainObject(m)) throw invalid(`messages[${i}]`, `Invalid type for 'messages[${i}]': expected an object, but got ${describe(m)}.`);
    if (m.role === undefined || m.role === null) throw new MakinaError("missing_required_parameter", `Missing required parameter: 'messages[${i}].role'.`, { param: `messages[${i}].role` });
    if (typeof m.role !== "string" || !ROLES.has(m.role)) {
      throw invalid(`messages[${i}].role`, `Invalid value for 'messages[${i}].role': expected one of 'system', 'developer', 'user', 'assistant', 'tool'.`);
    }
    if (m.name !== undefined && m.name !== null) string(256)(m.name, `messages[${i}].name`);
    if (m.role === "tool") {
      if (typeof m.tool_call_id !== "string") throw new MakinaError("missing_required_parameter", `Missing required parameter: 'messages[${i}].tool_call_id'.`, { param: `messages[${i}].tool_call_id` });
      return { role: m.role, content: messageContent(m, i, images).content, toolCallId: m.tool_call_id };
    }
    if (m.role === "assistant" && m.tool_calls !== undefined && m.tool_calls !== null) {
      const toolCalls = messageToolCalls(m.tool_calls, i);
      if (toolCalls.length) return { role: m.role, content: messageContent(m, i, images).content, toolCalls };
    }
    return { role: m.role, ...messageContent(m, i, images) };
  });
}

/**
 * The largest `max_tokens` any stack can take: far beyond any model's context (2^24 tokens), and within
 * the link's uint32, so a request the relay lets through can always reach its machine.
 */
export const MAX_COMPLETION_TOKENS = 16_777_216;

/** Checks a chat-completions body against the vendor interface and the gateway's limits. */
export function validateChatRequest(body: unknown): ChatRequest {
  if (!isPlainObject(body)) throw new MakinaError("invalid_value", `The request body must be a JSON object, but got ${describe(body)}.`);
  const needs: string[] = [];
  for (const [name, value] of Object.entries(body)) {
    if (CORE.has(name)) continue;
    const rule = Object.hasOwn(RULES, name) ? RULES[name] : undefined;
    if (!rule) throw new MakinaError("unknown_parameter", `Unrecognized request argument supplied: ${name.slice(0, 256)}`, { param: name.slice(0, 256) });
    if (value === null || value === undefined) continue;
    rule.check(value, name);
    if (!rule.neutral(value)) needs.push(name);
  }
  if (body.top_logprobs !== undefined && body.top_logprobs !== null && body.top_logprobs !== 0 && body.logprobs !== true) {
    throw invalid("top_logprobs", "Invalid 'top_logprobs': only allowed when 'logprobs' is true.");
  }

  if (body.model === undefined || body.model === null) throw new MakinaError("missing_required_parameter", "Missing required parameter: 'model'.", { param: "model" });
  if (typeof body.model !== "string" || body.model === "" || body.model.length > 256) {
    throw invalid("model", `Invalid type for 'model': expected a non-empty string of at most 256 characters, but got ${describe(body.model)}.`);
  }
  const images: string[] = [];
  const messages = validateMessages(body.messages, images);
  // Images are a need like any parameter: the stack's runtime must take them.
  if (images.length) needs.push("image_url");
  const tools = validateTools(body);
  checkToolTurns(messages);

  const stream = optional(body, "stream", boolean, false);
  let includeUsage = false;
  if (body.stream_options !== undefined && body.stream_options !== null) {
    if (!stream) throw invalid("stream_options", "Invalid 'stream_options': only allowed when 'stream' is true.");
    object(body.stream_options, "stream_options");
    const so = body.stream_options as Record<string, unknown>;
    for (const k of Object.keys(so)) {
      if (k !== "include_usage" && k !== "include_obfuscation") {
        throw new MakinaError("unknown_parameter", `Unrecognized request argument supplied: stream_options.${k.slice(0, 256)}`, { param: `stream_options.${k.slice(0, 256)}` });
      }
      if (so[k] !== null && so[k] !== undefined) boolean(so[k], `stream_options.${k}`);
    }
    includeUsage = so.include_usage === true;
  }

  const temperature = optional(body, "temperature", number(0, 2), 1);
  const topP = optional(body, "top_p", number(0, 1), 1);
  const maxCompletion = optional<number | null>(body, "max_completion_tokens", integer(1, MAX_COMPLETION_TOKENS), null);
  const maxTokens = optional<number | null>(body, "max_tokens", integer(1, MAX_COMPLETION_TOKENS), null);
  const seed = optional<number | undefined>(body, "seed", integer(0, 0xffffffff), undefined);

  let stop: string[] = [];
  if (body.stop !== undefined && body.stop !== null) {
    if (typeof body.stop === "string") stop = [body.stop];
    else if (Array.isArray(body.stop) && body.stop.every((s) => typeof s === "string")) stop = body.stop as string[];
    else throw invalid("stop", "Invalid type for 'stop': expected a string or an array of strings.");
    if (stop.length > MAX_STOP) throw invalid("stop", `Invalid 'stop': at most ${MAX_STOP} stop sequences are allowed.`);
    if (stop.some((s) => s === "" || s.length > 1024)) throw invalid("stop", "Invalid 'stop': each stop sequence must be 1 to 1024 characters.");
  }

  const format: ResponseFormat | undefined = body.response_format === undefined || body.response_format === null ? undefined : responseFormat(body.response_format, "response_format");
  return {
    model: body.model,
    includeUsage,
    imagePart: images[0],
    needs,
    input: {
      messages,
      temperature,
      topP,
      maxTokens: maxCompletion ?? maxTokens ?? 0,
      stop,
      seed,
      presencePenalty: (body.presence_penalty as number | null | undefined) ?? 0,
      frequencyPenalty: (body.frequency_penalty as number | null | undefined) ?? 0,
      stream,
      ...(format ? { responseFormat: format } : {}),
      unset: (["temperature", "top_p"] as const).filter((k) => body[k] === undefined || body[k] === null),
      ...(tools ?? {}),
    },
  };
}
