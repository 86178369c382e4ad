import type { ChatMessage, ContentPart } from "../../../proto/index.js";
import { boolean, checkChatRequest, imagePart, modelOf, oneOf, toolCallOf, type ChatRequest, type Conversation, type DraftResponseFormat, type DraftTool, type DraftToolChoice, type MessagePlace, type Named } from "../chat/index.js";
import { describeValue, isPlainObject, onlyKeys as only, refuse } from "../json-values.js";
import type { AskedTier } from "../../routing/index.js";
import { cacheKeyOf, OPENAI_TIERS } from "./decode-chat-request.js";

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
 * Parameters taken and left without effect: hints for the vendor's service (caching, safety ids),
 * `store` (nothing is kept: see `previous_response_id`), `include` (nothing extra to include), `truncation`,
 * and `reasoning` (the model does not reason aloud here; the answer has no reasoning items).
 */
const NEUTRAL = new Set(["metadata", "prompt_cache_key", "prompt_cache_options", "prompt_cache_retention", "safety_identifier", "user", "store", "include", "truncation", "reasoning", "stream_options"]);

/** Parameters that need what the gateway does not do: run in the background, keep conversations, stored prompts. */
const UNSERVED = new Set(["background", "conversation", "context_management", "prompt", "moderation", "top_logprobs"]);

const TOP = new Set(["model", "input", "instructions", "max_output_tokens", "temperature", "top_p", "tools", "tool_choice", "parallel_tool_calls", "text", "stream", "previous_response_id", "service_tier"]);

const { invalid, missing, unknown, unsupported } = refuse;

/** A message item's content parts as the conversation's. */
function contentParts(content: unknown[], path: string, role: string, images: string[]): ContentPart[] {
  return content.map((part: unknown, j) => {
    const p = `${path}[${j}]`;
    if (!isPlainObject(part)) throw invalid(p, `Invalid type for '${p}': expected an object, but got ${describeValue(part)}.`);
    const text = (t: string): ContentPart => ({ type: "text", text: t, imageUrl: "", detail: "" });
    switch (part.type) {
      case "input_text":
      case "output_text":
        only(part, p, ["type", "text", "annotations", "logprobs"]);
        if (typeof part.text !== "string") throw invalid(`${p}.text`, `Invalid type for '${p}.text': expected a string, but got ${describeValue(part.text)}.`);
        return text(part.text);
      case "refusal":
        only(part, p, ["type", "refusal"]);
        if (typeof part.refusal !== "string") throw invalid(`${p}.refusal`, `Invalid type for '${p}.refusal': expected a string.`);
        return text(part.refusal);
      case "input_image": {
        only(part, p, ["type", "image_url", "detail", "file_id"]);
        if (role !== "user") throw invalid(`${p}.type`, `Invalid value for '${p}.type': images are only allowed in user messages.`);
        if (part.file_id !== undefined && part.file_id !== null) throw unsupported(`${p}.file_id`, "Images by file id are not supported: give 'image_url' (an https URL or a data: URI).");
        if (typeof part.image_url !== "string") throw missing(`${p}.image_url`);
        images.push(`${p}.type`);
        return imagePart(part.image_url, part.detail, { url: `${p}.image_url`, detail: `${p}.detail` });
      }
      default:
        if (typeof part.type === "string" && part.type.length <= 64) throw unsupported(`${p}.type`, `Content parts of type '${part.type}' are not supported: send 'input_text' or 'input_image'.`);
        throw invalid(`${p}.type`, `Invalid value for '${p}.type': expected one of 'input_text', 'input_image', 'output_text', 'refusal'.`);
    }
  });
}

/** One input item as the conversation's: function calls join the assistant message before them, their outputs become tool messages. */
function decodeItem(item: unknown, i: number, into: Conversation): void {
  const p = `input[${i}]`;
  if (!isPlainObject(item)) throw invalid(p, `Invalid type for '${p}': expected an object, but got ${describeValue(item)}.`);
  const type = item.type ?? "message";
  if (type === "message") {
    only(item, p, ["type", "role", "content", "id", "status", "phase"]);
    if (typeof item.role !== "string" || !["user", "assistant", "system", "developer"].includes(item.role)) throw invalid(`${p}.role`, `Invalid value for '${p}.role': expected one of 'user', 'assistant', 'system', 'developer'.`);
    let message: ChatMessage;
    if (typeof item.content === "string") message = { role: item.role, content: item.content };
    else if (Array.isArray(item.content)) {
      const parts = contentParts(item.content, `${p}.content`, item.role, into.images);
      const content = parts.map((part) => part.text).join("");
      message = parts.some((part) => part.type === "image_url") ? { role: item.role, content, parts } : { role: item.role, content };
    } else throw invalid(`${p}.content`, `Invalid type for '${p}.content': expected a string or an array of content parts, but got ${describeValue(item.content)}.`);
    into.messages.push(message);
    into.places.push({ at: p });
    return;
  }
  if (type === "function_call") {
    only(item, p, ["type", "call_id", "name", "arguments", "id", "status"]);
    if (typeof item.call_id !== "string" || item.call_id === "") throw missing(`${p}.call_id`);
    if (typeof item.name !== "string" || item.name === "") throw missing(`${p}.name`);
    if (typeof item.arguments !== "string") throw invalid(`${p}.arguments`, `Invalid type for '${p}.arguments': expected JSON text.`);
    const call = toolCallOf({ id: item.call_id, name: item.name, arguments: item.arguments }, { id: `${p}.call_id`, name: `${p}.name`, arguments: `${p}.arguments` });
    // Calls of one answer come as items one after another; the assistant's text before them is the same answer.
    const last = into.messages.at(-1);
    if (last?.role === "assistant") (last.toolCalls ??= []).push(call);
    else {
      into.messages.push({ role: "assistant", content: "", toolCalls: [call] });
      into.places.push({ at: p });
    }
    return;
  }
  if (type === "function_call_output") {
    only(item, p, ["type", "call_id", "output", "id", "status"]);
    if (typeof item.call_id !== "string" || item.call_id === "") throw missing(`${p}.call_id`);
    let output = item.output;
    if (Array.isArray(output)) output = contentParts(output, `${p}.output`, "tool", into.images).map((part) => part.text).join("");
    if (typeof output !== "string") throw invalid(`${p}.output`, `Invalid type for '${p}.output': expected a string.`);
    into.messages.push({ role: "tool", toolCallId: item.call_id, content: output });
    into.places.push({ at: p, callId: `${p}.call_id` });
    return;
  }
  // Reasoning an earlier answer carried (of another model) is not shown to this one.
  if (type === "reasoning") return;
  if (type === "item_reference") throw unsupported(`${p}.type`, "Item references need stored responses, which this gateway does not keep: send the items themselves.");
  if (typeof type === "string" && type.length <= 64) throw unsupported(`${p}.type`, `Input items of type '${type}' are not supported: send messages, function calls and their outputs.`);
  throw invalid(`${p}.type`, `Invalid value for '${p}.type'.`);
}

/** `input`: a user message's text, or the items of a conversation. */
function decodeInput(input: unknown, into: Conversation): void {
  if (typeof input === "string") {
    into.messages.push({ role: "user", content: input });
    into.places.push({ at: "input" });
    return;
  }
  if (input === undefined || input === null) throw missing("input");
  if (!Array.isArray(input)) throw invalid("input", `Invalid type for 'input': expected a string or an array of input items, but got ${describeValue(input)}.`);
  if (input.length === 0) throw invalid("input", "Invalid 'input': empty array. Expected an array with minimum length 1.");
  input.forEach((item, i) => decodeItem(item, i, into));
}

/** `tools`: `[{type: "function", name, description?, parameters?, strict?}]` (the vendor's hosted tools refused), their values left to the domain's check. */
function decodeTools(tools: unknown): DraftTool[] {
  if (!Array.isArray(tools)) throw invalid("tools", `Invalid type for 'tools': expected an array, but got ${describeValue(tools)}.`);
  return tools.map((t: unknown, i) => {
    const p = `tools[${i}]`;
    if (!isPlainObject(t)) throw invalid(p, `Invalid type for '${p}': expected an object.`);
    if (t.type !== "function") throw unsupported(`${p}.type`, `Tools of type '${String(t.type).slice(0, 64)}' (the vendor's hosted tools) are not supported: describe your own functions with type 'function'.`);
    only(t, p, ["type", "name", "description", "parameters", "strict", "defer_loading"]);
    const part = (k: string) => ({ value: t[k], name: `${p}.${k}` });
    return { name: part("name"), description: part("description"), parameters: part("parameters"), strict: part("strict") };
  });
}

/** `tool_choice`: `none`, `auto`, `required`, or `{type: "function", name}`. */
function decodeToolChoice(choice: unknown): DraftToolChoice | undefined {
  if (choice === undefined || choice === null) return undefined;
  if (!isPlainObject(choice)) {
    oneOf("none", "auto", "required")(choice, "tool_choice");
    return { mode: choice as "none" | "auto" | "required" };
  }
  if (choice.type !== "function") throw unsupported("tool_choice.type", `A tool choice of type '${String(choice.type).slice(0, 64)}' is not supported: use 'auto', 'none', 'required' or a function.`);
  only(choice, "tool_choice", ["type", "name"]);
  if (typeof choice.name !== "string") throw missing("tool_choice.name");
  return { mode: "function", function: choice.name, functionName: "tool_choice.name" };
}

/** `text`: its `format` (the answer's shape) and its `verbosity` (a need when not `medium`). */
function decodeText(text: unknown, needs: Named<string>[]): DraftResponseFormat | undefined {
  if (text === undefined || text === null) return undefined;
  if (!isPlainObject(text)) throw invalid("text", `Invalid type for 'text': expected an object, but got ${describeValue(text)}.`);
  only(text, "text", ["format", "verbosity"]);
  if (text.verbosity !== undefined && text.verbosity !== null) {
    oneOf("low", "medium", "high")(text.verbosity, "text.verbosity");
    if (text.verbosity !== "medium") needs.push({ value: "verbosity", name: "text.verbosity" });
  }
  const format = text.format;
  if (format === undefined || format === null) return undefined;
  const name = "text.format";
  if (!isPlainObject(format)) throw invalid(name, `Invalid type for '${name}': expected an object, but got ${describeValue(format)}.`);
  only(format, name, format.type === "json_schema" ? ["type", "name", "schema", "strict", "description"] : ["type"]);
  const part = (k: string) => ({ value: format[k], name: `${name}.${k}` });
  return { name, type: part("type"), schemaName: part("name"), description: part("description"), schema: part("schema"), strict: part("strict") };
}

/**
 * Reads a Responses API body and makes it the gateway's domain request through the one check of chat requests,
 * every refusal naming the field of the body sent. Nothing is kept between requests: `previous_response_id` is
 * refused, and the whole conversation comes in `input`, as the tools that speak this API send it by default.
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
  const model = modelOf(body.model, "model");
  const conversation: Conversation = { messages: [], places: [], images: [] };
  if (body.instructions !== undefined && body.instructions !== null) {
    if (typeof body.instructions !== "string") throw invalid("instructions", `Invalid type for 'instructions': expected a string, but got ${describeValue(body.instructions)}.`);
    conversation.messages.push({ role: "system", content: body.instructions });
    conversation.places.push({ at: "instructions" });
  }
  decodeInput(body.input, conversation);
  if (body.stream !== undefined && body.stream !== null) boolean(body.stream, "stream");
  const needs: Named<string>[] = [];
  const format = decodeText(body.text, needs);
  const named = (name: string): Named => ({ value: body[name], name });
  const request = checkChatRequest({
    model,
    modelName: "model",
    ...conversation,
    messagesName: "input",
    stream: body.stream === true,
    // Its streams always end with their usage.
    includeUsage: true,
    temperature: named("temperature"),
    topP: named("top_p"),
    maxTokens: named("max_output_tokens"),
    ...(body.tools === undefined || body.tools === null ? {} : { tools: { value: decodeTools(body.tools), name: "tools" } }),
    toolChoice: { value: decodeToolChoice(body.tool_choice), name: "tool_choice" },
    parallelToolCalls: named("parallel_tool_calls"),
    ...(format ? { responseFormat: format } : {}),
    needs,
  });
  const echoFormat = isPlainObject(body.text) && isPlainObject(body.text.format) ? body.text.format : { type: "text" };
  const tier = body.service_tier === undefined || body.service_tier === null ? undefined : (oneOf(...OPENAI_TIERS)(body.service_tier, "service_tier"), body.service_tier as AskedTier);
  const cacheKey = cacheKeyOf(body.prompt_cache_key, body.user);
  return {
    ...request,
    ...(tier ? { serviceTier: tier } : {}),
    ...(cacheKey ? { cacheKey } : {}),
    echo: {
      instructions: typeof body.instructions === "string" ? body.instructions : null,
      maxOutputTokens: typeof body.max_output_tokens === "number" ? body.max_output_tokens : null,
      temperature: request.input.temperature,
      topP: request.input.topP,
      tools: Array.isArray(body.tools) ? body.tools : [],
      toolChoice: body.tool_choice ?? "auto",
      parallelToolCalls: body.parallel_tool_calls !== false,
      text: { format: echoFormat },
      metadata: isPlainObject(body.metadata) ? body.metadata : {},
    },
  };
}
