import { renameBy, renameParams } from "../gateway/rename-params.js";
import { describeValue, isPlainObject, onlyKeys as only, refuse } from "../json-values.js";
import { validateChatRequest, type ChatRequest } from "./validate-chat-request.js";

/** A Responses API request: the domain request, and what its answer says back of what was asked. */
export interface ResponsesRequest extends ChatRequest {
  echo: {
    instructions: string | null;
    maxOutputTokens: number | null;
    temperature: number;
    topP: number;
    tools: unknown[];
    toolChoice: unknown;
    parallelToolCalls: boolean;
    text: { format: unknown };
    metadata: Record<string, unknown>;
  };
}

/**
 * Parameters taken and left without effect: hints for the vendor's service (caching, tiers, safety ids),
 * `store` (nothing is kept: see `previous_response_id`), `include` (nothing extra to include), `truncation`,
 * and `reasoning` (the model does not reason aloud here; the answer has no reasoning items).
 */
const NEUTRAL = new Set(["metadata", "prompt_cache_key", "prompt_cache_options", "prompt_cache_retention", "safety_identifier", "service_tier", "user", "store", "include", "truncation", "reasoning", "stream_options"]);

/** Parameters that need what the gateway does not do: run in the background, keep conversations, stored prompts. */
const UNSERVED = new Set(["background", "conversation", "context_management", "prompt", "moderation", "top_logprobs"]);

const TOP = new Set(["model", "input", "instructions", "max_output_tokens", "temperature", "top_p", "tools", "tool_choice", "parallel_tool_calls", "text", "stream", "previous_response_id"]);

const { invalid, missing, unknown, unsupported } = refuse;

/** A message item's content parts as the chat interface's parts. */
function contentParts(content: unknown[], path: string, role: string): Record<string, unknown>[] {
  return content.map((part: unknown, j) => {
    const p = `${path}[${j}]`;
    if (!isPlainObject(part)) throw invalid(p, `Invalid type for '${p}': expected an object, but got ${describeValue(part)}.`);
    switch (part.type) {
      case "input_text":
      case "output_text":
        only(part, p, ["type", "text", "annotations", "logprobs"]);
        if (typeof part.text !== "string") throw invalid(`${p}.text`, `Invalid type for '${p}.text': expected a string, but got ${describeValue(part.text)}.`);
        return { type: "text", text: part.text };
      case "refusal":
        only(part, p, ["type", "refusal"]);
        if (typeof part.refusal !== "string") throw invalid(`${p}.refusal`, `Invalid type for '${p}.refusal': expected a string.`);
        return { type: "text", text: part.refusal };
      case "input_image": {
        only(part, p, ["type", "image_url", "detail", "file_id"]);
        if (role !== "user") throw invalid(`${p}.type`, `Invalid value for '${p}.type': images are only allowed in user messages.`);
        if (part.file_id !== undefined && part.file_id !== null) throw unsupported(`${p}.file_id`, "Images by file id are not supported: give 'image_url' (an https URL or a data: URI).");
        if (typeof part.image_url !== "string") throw missing(`${p}.image_url`);
        return { type: "image_url", image_url: part.detail === undefined || part.detail === null ? { url: part.image_url } : { url: part.image_url, detail: part.detail } };
      }
      default:
        if (typeof part.type === "string" && part.type.length <= 64) throw unsupported(`${p}.type`, `Content parts of type '${part.type}' are not supported: send 'input_text' or 'input_image'.`);
        throw invalid(`${p}.type`, `Invalid value for '${p}.type': expected one of 'input_text', 'input_image', 'output_text', 'refusal'.`);
    }
  });
}

/** The input items as chat messages: function calls join the assistant message before them, their outputs become `tool` messages. */
function translateInput(input: unknown, out: Record<string, unknown>[], paths: string[]): void {
  if (typeof input === "string") {
    out.push({ role: "user", content: input });
    paths.push("input");
    return;
  }
  if (input === undefined || input === null) throw missing("input");
  if (!Array.isArray(input)) throw invalid("input", `Invalid type for 'input': expected a string or an array of input items, but got ${describeValue(input)}.`);
  if (input.length === 0) throw invalid("input", "Invalid 'input': empty array. Expected an array with minimum length 1.");
  input.forEach((item: unknown, i) => {
    const p = `input[${i}]`;
    if (!isPlainObject(item)) throw invalid(p, `Invalid type for '${p}': expected an object, but got ${describeValue(item)}.`);
    const type = item.type ?? "message";
    if (type === "message") {
      only(item, p, ["type", "role", "content", "id", "status", "phase"]);
      if (typeof item.role !== "string" || !["user", "assistant", "system", "developer"].includes(item.role)) throw invalid(`${p}.role`, `Invalid value for '${p}.role': expected one of 'user', 'assistant', 'system', 'developer'.`);
      let content: unknown = item.content;
      if (Array.isArray(content)) {
        const parts = contentParts(content, `${p}.content`, item.role);
        content = parts.some((part) => part.type === "image_url") ? parts : parts.map((part) => part.text).join("");
      } else if (typeof content !== "string") throw invalid(`${p}.content`, `Invalid type for '${p}.content': expected a string or an array of content parts, but got ${describeValue(content)}.`);
      out.push({ role: item.role, content });
      paths.push(p);
      return;
    }
    if (type === "function_call") {
      only(item, p, ["type", "call_id", "name", "arguments", "id", "status"]);
      if (typeof item.call_id !== "string" || item.call_id === "") throw missing(`${p}.call_id`);
      if (typeof item.name !== "string" || item.name === "") throw missing(`${p}.name`);
      if (typeof item.arguments !== "string") throw invalid(`${p}.arguments`, `Invalid type for '${p}.arguments': expected JSON text.`);
      const call = { id: item.call_id, type: "function", function: { name: item.name, arguments: item.arguments } };
      // Calls of one answer come as items one after another; the assistant's text before them is the same answer.
      const last = out.at(-1);
      if (last?.role === "assistant" && !Array.isArray(last.content)) {
        ((last.tool_calls ??= []) as unknown[]).push(call);
        if (last.content === "") last.content = null;
      } else {
        out.push({ role: "assistant", content: null, tool_calls: [call] });
        paths.push(p);
      }
      return;
    }
    if (type === "function_call_output") {
      only(item, p, ["type", "call_id", "output", "id", "status"]);
      if (typeof item.call_id !== "string" || item.call_id === "") throw missing(`${p}.call_id`);
      let output = item.output;
      if (Array.isArray(output)) output = contentParts(output, `${p}.output`, "tool").map((part) => part.text).join("");
      if (typeof output !== "string") throw invalid(`${p}.output`, `Invalid type for '${p}.output': expected a string.`);
      out.push({ role: "tool", tool_call_id: item.call_id, content: output });
      paths.push(p);
      return;
    }
    // Reasoning an earlier answer carried (of another model) is not shown to this one.
    if (type === "reasoning") return;
    if (type === "item_reference") throw unsupported(`${p}.type`, "Item references need stored responses, which this gateway does not keep: send the items themselves.");
    if (typeof type === "string" && type.length <= 64) throw unsupported(`${p}.type`, `Input items of type '${type}' are not supported: send messages, function calls and their outputs.`);
    throw invalid(`${p}.type`, `Invalid value for '${p}.type'.`);
  });
}

function translateTools(tools: unknown): unknown {
  if (!Array.isArray(tools)) return tools;
  return tools.map((t: unknown, i) => {
    const p = `tools[${i}]`;
    if (!isPlainObject(t)) return t;
    if (t.type !== "function") throw unsupported(`${p}.type`, `Tools of type '${String(t.type).slice(0, 64)}' (the vendor's hosted tools) are not supported: describe your own functions with type 'function'.`);
    only(t, p, ["type", "name", "description", "parameters", "strict", "defer_loading"]);
    const fn: Record<string, unknown> = { name: t.name };
    for (const k of ["description", "parameters", "strict"] as const) if (t[k] !== undefined && t[k] !== null) fn[k] = t[k];
    return { type: "function", function: fn };
  });
}

function translateToolChoice(choice: unknown): unknown {
  if (!isPlainObject(choice)) return choice;
  if (choice.type !== "function") throw unsupported("tool_choice.type", `A tool choice of type '${String(choice.type).slice(0, 64)}' is not supported: use 'auto', 'none', 'required' or a function.`);
  only(choice, "tool_choice", ["type", "name"]);
  if (typeof choice.name !== "string") throw missing("tool_choice.name");
  return { type: "function", function: { name: choice.name } };
}

/** `text.format` as the chat interface's `response_format`. */
function translateText(text: unknown, chat: Record<string, unknown>): void {
  if (text === undefined || text === null) return;
  if (!isPlainObject(text)) throw invalid("text", `Invalid type for 'text': expected an object, but got ${describeValue(text)}.`);
  only(text, "text", ["format", "verbosity"]);
  if (text.verbosity !== undefined && text.verbosity !== null) chat.verbosity = text.verbosity;
  const format = text.format;
  if (format === undefined || format === null) return;
  if (!isPlainObject(format)) throw invalid("text.format", `Invalid type for 'text.format': expected an object, but got ${describeValue(format)}.`);
  if (format.type !== "json_schema") {
    only(format, "text.format", ["type"]);
    chat.response_format = { type: format.type };
    return;
  }
  only(format, "text.format", ["type", "name", "schema", "strict", "description"]);
  const { type: _type, ...jsonSchema } = format;
  chat.response_format = { type: "json_schema", json_schema: jsonSchema };
}

/**
 * Where the chat form's parameters came from in the Responses API's body, for the text of a refusal: of the body
 * checked, and of a refusal that comes later (the plan, the runtime), where an item's place is no longer known.
 */
export const renameResponsesParam = renameBy([
  [/^tools\[(\d+)\]\.function\./, "tools[$1]."],
  [/^tools\[(\d+)\]\.function/, "tools[$1]"],
  [/^tool_choice\.function\.name/, "tool_choice.name"],
  [/^max_tokens$/, "max_output_tokens"],
  [/^response_format\.json_schema\./, "text.format."],
  [/^response_format(\.json_schema)?/, "text.format"],
  [/^verbosity/, "text.verbosity"],
  [/^messages(\[\d+\].*)?$/, "input"],
]);

/**
 * Checks a Responses API body and makes it the gateway's domain request: it is said again in the chat
 * interface's terms and checked by the one validator of chat requests, whose refusals are told in the
 * Responses API's own parameter names. Nothing is kept between requests: `previous_response_id` is refused,
 * and the whole conversation comes in `input`, as the tools that speak this API send it by default.
 */
export function decodeResponsesRequest(body: unknown): ResponsesRequest {
  if (!isPlainObject(body)) throw refuse.notObject(body);
  for (const [k, v] of Object.entries(body)) {
    if (TOP.has(k) || NEUTRAL.has(k)) continue;
    if (UNSERVED.has(k)) {
      if (v === undefined || v === null || v === false || (k === "top_logprobs" && v === 0)) continue;
      throw unsupported(k, `The parameter '${k}' is not supported by this gateway.`);
    }
    throw unknown(k);
  }
  if (body.previous_response_id !== undefined && body.previous_response_id !== null) {
    throw unsupported("previous_response_id", "This gateway does not keep responses, so 'previous_response_id' cannot continue one: send the whole conversation in 'input' (its earlier messages, function calls and their outputs), with 'store': false.");
  }
  const messages: Record<string, unknown>[] = [];
  const paths: string[] = [];
  if (body.instructions !== undefined && body.instructions !== null) {
    if (typeof body.instructions !== "string") throw invalid("instructions", `Invalid type for 'instructions': expected a string, but got ${describeValue(body.instructions)}.`);
    messages.push({ role: "system", content: body.instructions });
    paths.push("instructions");
  }
  translateInput(body.input, messages, paths);
  const chat: Record<string, unknown> = { model: body.model, messages };
  for (const [from, to] of [["max_output_tokens", "max_tokens"], ["stream", "stream"], ["temperature", "temperature"], ["top_p", "top_p"], ["parallel_tool_calls", "parallel_tool_calls"]] as const) if (body[from] !== undefined) chat[to] = body[from];
  if (body.tools !== undefined) chat.tools = translateTools(body.tools);
  if (body.tool_choice !== undefined) chat.tool_choice = translateToolChoice(body.tool_choice);
  translateText(body.text, chat);
  let request: ChatRequest;
  try {
    request = validateChatRequest(chat);
  } catch (err) {
    throw renameParams(err, (param) => {
      const at = /^messages\[(\d+)\]/.exec(param);
      return at ? (paths[Number(at[1])] ?? "input") : renameResponsesParam(param);
    });
  }
  const format = isPlainObject(body.text) && isPlainObject(body.text.format) ? body.text.format : { type: "text" };
  return {
    ...request,
    echo: {
      instructions: typeof body.instructions === "string" ? body.instructions : null,
      maxOutputTokens: typeof body.max_output_tokens === "number" ? body.max_output_tokens : null,
      temperature: request.input.temperature,
      topP: request.input.topP,
      tools: Array.isArray(body.tools) ? body.tools : [],
      toolChoice: body.tool_choice ?? "auto",
      parallelToolCalls: body.parallel_tool_calls !== false,
      text: { format },
      metadata: isPlainObject(body.metadata) ? body.metadata : {},
    },
  };
}
