import { MakinaError } from "../../../proto/index.js";
import { renameBy, renameParams } from "../gateway/rename-params.js";
import { describeValue, isPlainObject, refuse } from "../json-values.js";
import { validateChatRequest, type ChatRequest } from "../openai/validate-chat-request.js";

/**
 * Parameters of the Messages API taken and left without effect: hints for Anthropic's own service (caching,
 * tiers, regions, speed, effort) and `thinking` (the model does not think aloud here; the answer has no
 * thinking blocks, which the API allows).
 */
const NEUTRAL = new Set(["metadata", "service_tier", "cache_control", "inference_geo", "speed", "thinking"]);

/** Parameters of the Messages API for Anthropic's own tools and services, which no stack serves. */
const UNSERVED = new Set(["container", "mcp_servers", "context_management", "top_k"]);

const TOP = new Set(["model", "messages", "max_tokens", "system", "stop_sequences", "stream", "temperature", "top_p", "tools", "tool_choice", "output_config"]);

/** Keys of a tool that say nothing to a stack's runtime (hints for Anthropic's service). */
const TOOL_NEUTRAL = new Set(["cache_control", "defer_loading", "eager_input_streaming", "input_examples", "allowed_callers", "type"]);

/** Keys of a content block that change nothing here (caching hints, citations of the client's own). */
const BLOCK_NEUTRAL = new Set(["cache_control", "citations"]);

const { invalid, missing, unknown } = refuse;

function checkKeys(block: Record<string, unknown>, path: string, allowed: readonly string[]): void {
  for (const k of Object.keys(block)) if (!allowed.includes(k) && !BLOCK_NEUTRAL.has(k)) throw unknown(`${path}.${k}`);
}

/** A text block's text. */
function textOf(block: Record<string, unknown>, path: string): string {
  checkKeys(block, path, ["type", "text"]);
  if (typeof block.text !== "string") throw invalid(`${path}.text`, `Invalid type for '${path}.text': expected a string, but got ${describeValue(block.text)}.`);
  return block.text;
}

/** An image block as the chat interface's image part: base64 data becomes a `data:` URI, a URL stays one. */
function imageOf(block: Record<string, unknown>, path: string): Record<string, unknown> {
  checkKeys(block, path, ["type", "source"]);
  const source = block.source;
  if (!isPlainObject(source)) throw missing(`${path}.source`);
  if (source.type === "base64") {
    if (typeof source.media_type !== "string" || !/^image\/[a-z0-9.+-]+$/i.test(source.media_type)) throw invalid(`${path}.source.media_type`, `Invalid '${path}.source.media_type': expected an image type such as 'image/png'.`);
    if (typeof source.data !== "string") throw invalid(`${path}.source.data`, `Invalid type for '${path}.source.data': expected base64 text.`);
    return { type: "image_url", image_url: { url: `data:${source.media_type};base64,${source.data}` } };
  }
  if (source.type === "url") {
    if (typeof source.url !== "string") throw invalid(`${path}.source.url`, `Invalid type for '${path}.source.url': expected a string.`);
    return { type: "image_url", image_url: { url: source.url } };
  }
  throw new MakinaError("unsupported_parameter", `Image sources of type '${String(source.type).slice(0, 40)}' are not supported: send 'base64' or 'url'.`, { param: `${path}.source.type` });
}

/** A tool result's content: text, or text blocks joined (an image in a tool result has no place in the chat form). */
function toolResultText(content: unknown, path: string): string {
  if (content === undefined || content === null) return "";
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) throw invalid(path, `Invalid type for '${path}': expected a string or an array of text blocks, but got ${describeValue(content)}.`);
  return content
    .map((b: unknown, i) => {
      const p = `${path}[${i}]`;
      if (!isPlainObject(b)) throw invalid(p, `Invalid type for '${p}': expected an object, but got ${describeValue(b)}.`);
      if (b.type !== "text") throw new MakinaError("unsupported_parameter", `Tool results with '${String(b.type).slice(0, 40)}' blocks are not supported: send text.`, { param: `${p}.type` });
      return textOf(b, p);
    })
    .join("\n");
}

/** `system`: a string, or text blocks (joined by new lines). */
function systemText(system: unknown): string {
  if (typeof system === "string") return system;
  if (!Array.isArray(system)) throw invalid("system", `Invalid type for 'system': expected a string or an array of text blocks, but got ${describeValue(system)}.`);
  return system
    .map((b: unknown, i) => {
      if (!isPlainObject(b) || b.type !== "text") throw invalid(`system[${i}]`, `Invalid 'system[${i}]': expected a text block.`);
      return textOf(b, `system[${i}]`);
    })
    .join("\n");
}

/** One Messages-API message as chat messages: tool results become `tool` messages (before the user's own words), tool uses become tool calls. */
function translateMessage(m: unknown, i: number, out: Record<string, unknown>[], paths: string[]): void {
  const path = `messages[${i}]`;
  if (!isPlainObject(m)) throw invalid(path, `Invalid type for '${path}': expected an object, but got ${describeValue(m)}.`);
  for (const k of Object.keys(m)) if (k !== "role" && k !== "content") throw unknown(`${path}.${k}`);
  if (m.role !== "user" && m.role !== "assistant") throw invalid(`${path}.role`, `Invalid value for '${path}.role': expected 'user' or 'assistant'.`);
  const push = (message: Record<string, unknown>) => {
    out.push(message);
    paths.push(path);
  };
  if (typeof m.content === "string") return push({ role: m.role, content: m.content });
  if (m.content === undefined || m.content === null) throw missing(`${path}.content`);
  if (!Array.isArray(m.content)) throw invalid(`${path}.content`, `Invalid type for '${path}.content': expected a string or an array of content blocks, but got ${describeValue(m.content)}.`);
  const parts: Record<string, unknown>[] = [];
  const calls: Record<string, unknown>[] = [];
  m.content.forEach((b: unknown, j) => {
    const p = `${path}.content[${j}]`;
    if (!isPlainObject(b)) throw invalid(p, `Invalid type for '${p}': expected an object, but got ${describeValue(b)}.`);
    switch (b.type) {
      case "text":
        parts.push({ type: "text", text: textOf(b, p) });
        return;
      case "image":
        if (m.role !== "user") throw invalid(`${p}.type`, `Invalid value for '${p}.type': images are only allowed in user messages.`);
        parts.push(imageOf(b, p));
        return;
      case "tool_use": {
        if (m.role !== "assistant") throw invalid(`${p}.type`, `Invalid value for '${p}.type': 'tool_use' blocks belong to assistant messages.`);
        checkKeys(b, p, ["type", "id", "name", "input", "caller"]);
        if (typeof b.id !== "string" || b.id === "") throw missing(`${p}.id`);
        if (typeof b.name !== "string" || b.name === "") throw missing(`${p}.name`);
        if (!isPlainObject(b.input)) throw invalid(`${p}.input`, `Invalid type for '${p}.input': expected an object, but got ${describeValue(b.input)}.`);
        calls.push({ id: b.id, type: "function", function: { name: b.name, arguments: JSON.stringify(b.input) } });
        return;
      }
      case "tool_result": {
        if (m.role !== "user") throw invalid(`${p}.type`, `Invalid value for '${p}.type': 'tool_result' blocks belong to user messages.`);
        checkKeys(b, p, ["type", "tool_use_id", "content", "is_error"]);
        if (typeof b.tool_use_id !== "string" || b.tool_use_id === "") throw missing(`${p}.tool_use_id`);
        if (b.is_error !== undefined && typeof b.is_error !== "boolean") throw invalid(`${p}.is_error`, `Invalid type for '${p}.is_error': expected a boolean.`);
        const text = toolResultText(b.content, `${p}.content`);
        push({ role: "tool", tool_call_id: b.tool_use_id, content: b.is_error === true ? `Error: ${text}` : text });
        return;
      }
      case "thinking":
      case "redacted_thinking":
        // Thinking an earlier answer carried (of another model) is not shown to this one.
        return;
      default:
        if (typeof b.type === "string" && b.type.length <= 64) throw new MakinaError("unsupported_parameter", `Content blocks of type '${b.type}' are not supported: send 'text', 'image', 'tool_use' or 'tool_result'.`, { param: `${p}.type` });
        throw invalid(`${p}.type`, `Invalid value for '${p}.type': expected one of 'text', 'image', 'tool_use', 'tool_result'.`);
    }
  });
  if (m.role === "assistant") {
    const text = parts.map((part) => part.text).join("");
    if (calls.length > 0) push({ role: "assistant", content: text || null, tool_calls: calls });
    else push({ role: "assistant", content: text });
    return;
  }
  if (parts.length > 0) push({ role: "user", content: parts.some((part) => part.type === "image_url") ? parts : parts.map((part) => part.text).join("") });
}

function translateTools(tools: unknown): unknown {
  if (!Array.isArray(tools)) return tools;
  return tools.map((t: unknown, i) => {
    const p = `tools[${i}]`;
    if (!isPlainObject(t)) return t;
    if (t.type !== undefined && t.type !== null && t.type !== "custom") {
      throw new MakinaError("unsupported_parameter", `Tools of type '${String(t.type).slice(0, 64)}' (Anthropic's own) are not supported: describe your function with 'name' and 'input_schema'.`, { param: `${p}.type` });
    }
    for (const k of Object.keys(t)) if (!["name", "description", "input_schema", "strict"].includes(k) && !TOOL_NEUTRAL.has(k)) throw unknown(`${p}.${k}`);
    if (t.input_schema === undefined || t.input_schema === null) throw missing(`${p}.input_schema`);
    const fn: Record<string, unknown> = { name: t.name, parameters: t.input_schema };
    if (t.description !== undefined) fn.description = t.description;
    if (t.strict !== undefined) fn.strict = t.strict;
    return { type: "function", function: fn };
  });
}

/** `tool_choice` as the chat interface says it, with `parallel_tool_calls` when parallel use is disabled. */
function translateToolChoice(choice: unknown, chat: Record<string, unknown>): void {
  if (choice === undefined || choice === null) return;
  if (!isPlainObject(choice)) throw invalid("tool_choice", `Invalid type for 'tool_choice': expected an object, but got ${describeValue(choice)}.`);
  for (const k of Object.keys(choice)) if (!["type", "name", "disable_parallel_tool_use"].includes(k)) throw unknown(`tool_choice.${k}`);
  if (choice.disable_parallel_tool_use !== undefined) chat.parallel_tool_calls = choice.disable_parallel_tool_use === true ? false : choice.disable_parallel_tool_use === false ? true : choice.disable_parallel_tool_use;
  if (choice.type === "auto") chat.tool_choice = "auto";
  else if (choice.type === "any") chat.tool_choice = "required";
  else if (choice.type === "none") chat.tool_choice = "none";
  else if (choice.type === "tool") {
    if (typeof choice.name !== "string") throw missing("tool_choice.name");
    chat.tool_choice = { type: "function", function: { name: choice.name } };
  } else throw invalid("tool_choice.type", "Invalid value for 'tool_choice.type': expected one of 'auto', 'any', 'tool', 'none'.");
}

/** `output_config`: an effort (taken, without effect) and a JSON schema the answer must follow. */
function translateOutputConfig(config: unknown, chat: Record<string, unknown>): void {
  if (config === undefined || config === null) return;
  if (!isPlainObject(config)) throw invalid("output_config", `Invalid type for 'output_config': expected an object, but got ${describeValue(config)}.`);
  for (const k of Object.keys(config)) if (k !== "effort" && k !== "format") throw unknown(`output_config.${k}`);
  const format = config.format;
  if (format === undefined || format === null) return;
  if (!isPlainObject(format)) throw invalid("output_config.format", `Invalid type for 'output_config.format': expected an object, but got ${describeValue(format)}.`);
  for (const k of Object.keys(format)) if (k !== "type" && k !== "schema") throw unknown(`output_config.format.${k}`);
  if (format.type !== "json_schema") throw invalid("output_config.format.type", "Invalid value for 'output_config.format.type': expected 'json_schema'.");
  chat.response_format = { type: "json_schema", json_schema: { name: "output", schema: format.schema ?? {}, strict: true } };
}

/**
 * Where the chat form's parameters came from in the Messages API's body, for the text of a refusal: of the body
 * checked, and of a refusal that comes later (the plan, the runtime), where a message's place is no longer known.
 */
export const renameMessagesParam = renameBy([
  [/^tools\[(\d+)\]\.function\.parameters/, "tools[$1].input_schema"],
  [/^tools\[(\d+)\]\.function/, "tools[$1]"],
  [/^tool_choice\.function\.name/, "tool_choice.name"],
  [/^tool_choice\.function/, "tool_choice"],
  [/^parallel_tool_calls$/, "tool_choice.disable_parallel_tool_use"],
  [/^stop$/, "stop_sequences"],
  [/^response_format\.json_schema\.schema/, "output_config.format.schema"],
  [/^response_format(\.json_schema)?/, "output_config.format"],
  [/^messages\[\d+\].*$/, "messages"],
]);

/**
 * Checks a Messages API body and makes it the gateway's domain request: it is said again in the chat
 * interface's terms and checked by the one validator of chat requests, whose refusals are told in the
 * Messages API's own parameter names.
 */
export function decodeMessagesRequest(body: unknown): ChatRequest {
  if (!isPlainObject(body)) throw refuse.notObject(body);
  const chat: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(body)) {
    if (TOP.has(k) || NEUTRAL.has(k)) continue;
    if (UNSERVED.has(k)) {
      if (v === undefined || v === null) continue;
      throw refuse.unsupported(k, `The parameter '${k}' is not supported by this gateway.`);
    }
    throw unknown(k);
  }
  if (body.max_tokens === undefined || body.max_tokens === null) throw missing("max_tokens");
  if (body.messages === undefined || body.messages === null) throw missing("messages");
  if (!Array.isArray(body.messages)) throw invalid("messages", `Invalid type for 'messages': expected an array, but got ${describeValue(body.messages)}.`);
  if (body.messages.length === 0) throw invalid("messages", "Invalid 'messages': empty array. Expected an array with minimum length 1.");
  const messages: Record<string, unknown>[] = [];
  const paths: string[] = [];
  if (body.system !== undefined && body.system !== null) {
    messages.push({ role: "system", content: systemText(body.system) });
    paths.push("system");
  }
  body.messages.forEach((m, i) => translateMessage(m, i, messages, paths));
  chat.model = body.model;
  chat.messages = messages;
  chat.max_tokens = body.max_tokens;
  for (const [from, to] of [["stop_sequences", "stop"], ["stream", "stream"], ["temperature", "temperature"], ["top_p", "top_p"]] as const) if (body[from] !== undefined) chat[to] = body[from];
  if (body.tools !== undefined) chat.tools = translateTools(body.tools);
  translateToolChoice(body.tool_choice, chat);
  translateOutputConfig(body.output_config, chat);
  try {
    return validateChatRequest(chat);
  } catch (err) {
    throw renameParams(err, (param) => {
      const at = /^messages\[(\d+)\]/.exec(param);
      return at ? (paths[Number(at[1])] ?? "messages") : renameMessagesParam(param);
    });
  }
}
