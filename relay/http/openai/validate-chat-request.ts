import { MakinaError, type ChatMessage } from "../../../proto/index.js";

/** A validated chat-completions request, in the gateway's terms. */
export interface ChatRequest {
  model: string;
  messages: ChatMessage[];
  stream: boolean;
  /** `stream_options.include_usage`. */
  includeUsage: boolean;
  temperature: number;
  topP: number;
  /** `max_tokens` / `max_completion_tokens`; null = what is left of the context. */
  maxTokens: number | null;
  stop: string[];
  seed: number | undefined;
}

const ROLES = new Set(["system", "developer", "user", "assistant", "tool"]);

/** The gateway's limits on a chat request. */
export interface ChatLimits {
  /** Most stop sequences. @default 4 */
  maxStop: number;
}

/**
 * Parameters of the vendor interface that the gateway knows but honours only in
 * their neutral form; any other value is refused with `unsupported_parameter`
 * rather than silently dropped.
 */
const NEUTRAL: Record<string, (v: unknown) => boolean> = {
  n: (v) => v === 1,
  presence_penalty: (v) => v === 0,
  frequency_penalty: (v) => v === 0,
  logprobs: (v) => v === false,
  top_logprobs: (v) => v === 0,
  logit_bias: (v) => isPlainObject(v) && Object.keys(v).length === 0,
  response_format: (v) => isPlainObject(v) && v.type === "text",
  tools: (v) => Array.isArray(v) && v.length === 0,
  tool_choice: (v) => v === "none",
  parallel_tool_calls: () => true,
  functions: (v) => Array.isArray(v) && v.length === 0,
  function_call: (v) => v === "none",
  store: (v) => v === false,
  metadata: (v) => isPlainObject(v),
  service_tier: (v) => v === "auto" || v === "default",
  modalities: (v) => Array.isArray(v) && v.length === 1 && v[0] === "text",
  audio: () => false,
  prediction: () => false,
  reasoning_effort: () => false,
  web_search_options: () => false,
  verbosity: () => false,
  prompt_cache_key: (v) => typeof v === "string",
  safety_identifier: (v) => typeof v === "string",
  user: (v) => typeof v === "string",
};

const SUPPORTED = new Set(["model", "messages", "stream", "stream_options", "temperature", "top_p", "max_tokens", "max_completion_tokens", "stop", "seed"]);

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

const invalid = (param: string, message: string) => new MakinaError("invalid_value", message, { param });

function optionalNumber(body: Record<string, unknown>, name: string, min: number, max: number, fallback: number): number {
  const v = body[name];
  if (v === undefined || v === null) return fallback;
  if (typeof v !== "number" || !Number.isFinite(v)) throw invalid(name, `Invalid type for '${name}': expected a number, but got ${describe(v)}.`);
  if (v < min || v > max) throw invalid(name, `Invalid '${name}': ${v} is outside the range ${min} to ${max}.`);
  return v;
}

function optionalInteger(body: Record<string, unknown>, name: string, min: number, max = Number.MAX_SAFE_INTEGER): number | undefined {
  const v = body[name];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "number" || !Number.isInteger(v)) throw invalid(name, `Invalid type for '${name}': expected an integer, but got ${describe(v)}.`);
  if (v < min || v > max) throw invalid(name, `Invalid '${name}': ${v} is outside the range ${min} to ${max}.`);
  return v;
}

function describe(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "an array";
  return typeof v === "object" ? "an object" : `a ${typeof v}`;
}

function messageContent(m: Record<string, unknown>, i: number): string {
  const param = `messages[${i}].content`;
  const c = m.content;
  if (typeof c === "string") return c;
  if ((c === null || c === undefined) && m.role === "assistant") return "";
  if (c === undefined) throw new MakinaError("missing_required_parameter", `Missing required parameter: '${param}'.`, { param });
  if (!Array.isArray(c)) throw invalid(param, `Invalid type for '${param}': expected a string or an array of content parts, but got ${describe(c)}.`);
  return c
    .map((part: unknown, j) => {
      const p = `${param}[${j}]`;
      if (!isPlainObject(part)) throw invalid(p, `Invalid type for '${p}': expected an object, but got ${describe(part)}.`);
      if (part.type === "text" || part.type === "input_text") {
        if (typeof part.text !== "string") throw invalid(`${p}.text`, `Invalid type for '${p}.text': expected a string, but got ${describe(part.text)}.`);
        return part.text;
      }
      if (typeof part.type === "string" && ["image_url", "input_audio", "file", "refusal"].includes(part.type)) {
        throw new MakinaError("unsupported_parameter", `Content parts of type '${part.type}' are not supported by this model's runtime.`, { param: `${p}.type` });
      }
      throw invalid(`${p}.type`, `Invalid value for '${p}.type': expected 'text'.`);
    })
    .join("");
}

/** Checks a chat-completions body against the vendor interface and the gateway's limits. */
export function validateChatRequest(body: unknown, limits: ChatLimits = { maxStop: 4 }): ChatRequest {
  if (!isPlainObject(body)) throw new MakinaError("invalid_value", `The request body must be a JSON object, but got ${describe(body)}.`);
  for (const name of Object.keys(body)) {
    if (SUPPORTED.has(name)) continue;
    const neutral = NEUTRAL[name];
    if (!neutral) throw new MakinaError("unknown_parameter", `Unrecognized request argument supplied: ${name}`, { param: name });
    if (body[name] !== null && !neutral(body[name])) {
      throw new MakinaError("unsupported_parameter", `The parameter '${name}' with this value is not supported by this model's runtime.`, { param: name });
    }
  }

  if (body.model === undefined) throw new MakinaError("missing_required_parameter", "Missing required parameter: 'model'.", { param: "model" });
  if (typeof body.model !== "string" || body.model === "") throw invalid("model", `Invalid type for 'model': expected a non-empty string, but got ${describe(body.model)}.`);

  if (body.messages === undefined) throw new MakinaError("missing_required_parameter", "Missing required parameter: 'messages'.", { param: "messages" });
  if (!Array.isArray(body.messages)) throw invalid("messages", `Invalid type for 'messages': expected an array, but got ${describe(body.messages)}.`);
  if (body.messages.length === 0) throw invalid("messages", "Invalid 'messages': empty array. Expected an array with minimum length 1.");
  const messages = body.messages.map((m: unknown, i): ChatMessage => {
    if (!isPlainObject(m)) throw invalid(`messages[${i}]`, `Invalid type for 'messages[${i}]': expected an object, but got ${describe(m)}.`);
    if (m.role === undefined) throw new MakinaError("missing_required_parameter", `Missing required parameter: 'messages[${i}].role'.`, { param: `messages[${i}].role` });
    if (typeof m.role !== "string" || !ROLES.has(m.role)) {
      throw invalid(`messages[${i}].role`, `Invalid value for 'messages[${i}].role': expected one of 'system', 'developer', 'user', 'assistant', 'tool'.`);
    }
    return { role: m.role, content: messageContent(m, i) };
  });

  const stream = body.stream ?? false;
  if (typeof stream !== "boolean") throw invalid("stream", `Invalid type for 'stream': expected a boolean, but got ${describe(stream)}.`);
  let includeUsage = false;
  if (body.stream_options !== undefined && body.stream_options !== null) {
    if (!stream) throw invalid("stream_options", "Invalid 'stream_options': only allowed when 'stream' is true.");
    if (!isPlainObject(body.stream_options)) throw invalid("stream_options", `Invalid type for 'stream_options': expected an object, but got ${describe(body.stream_options)}.`);
    for (const k of Object.keys(body.stream_options)) {
      if (k !== "include_usage" && k !== "include_obfuscation") throw new MakinaError("unknown_parameter", `Unrecognized request argument supplied: stream_options.${k}`, { param: `stream_options.${k}` });
    }
    const iu = body.stream_options.include_usage;
    if (iu !== undefined && typeof iu !== "boolean") throw invalid("stream_options.include_usage", "Invalid type for 'stream_options.include_usage': expected a boolean.");
    includeUsage = iu === true;
  }

  const temperature = optionalNumber(body, "temperature", 0, 2, 1);
  const topP = optionalNumber(body, "top_p", 0, 1, 1);
  const maxTokens = optionalInteger(body, "max_completion_tokens", 1) ?? optionalInteger(body, "max_tokens", 1) ?? null;
  const seed = optionalInteger(body, "seed", 0, 0xffffffff);

  let stop: string[] = [];
  if (body.stop !== undefined && body.stop !== null) {
    if (typeof body.stop === "string") stop = [body.stop];
    else if (Array.isArray(body.stop) && body.stop.every((s) => typeof s === "string")) stop = body.stop as string[];
    else throw invalid("stop", "Invalid type for 'stop': expected a string or an array of strings.");
    if (stop.length > limits.maxStop) throw invalid("stop", `Invalid 'stop': at most ${limits.maxStop} stop sequences are allowed.`);
    if (stop.some((s) => s === "")) throw invalid("stop", "Invalid 'stop': stop sequences must not be empty.");
  }

  return { model: body.model, messages, stream, includeUsage, temperature, topP, maxTokens, stop, seed };
}
