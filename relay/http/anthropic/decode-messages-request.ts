import { MakinaError, type ChatMessage, type ContentPart, type ToolCall } from "../../../proto/index.js";
import { boolean, checkChatRequest, imagePart, modelOf, oneOf, toolCallOf, type ChatRequest, type Conversation, type DraftResponseFormat, type DraftTool, type DraftToolChoice, type MessagePlace, type Named } from "../chat/index.js";
import { describeValue, isPlainObject, refuse } from "../json-values.js";
import type { AskedTier } from "../../routing/index.js";

/**
 * Parameters of the Messages API taken and left without effect: hints for Anthropic's own service (caching,
 * regions, speed, effort) and `thinking` (the model does not think aloud here; the answer has no
 * thinking blocks, which the API allows).
 */
const NEUTRAL = new Set(["metadata", "cache_control", "inference_geo", "speed", "thinking"]);

/** Parameters of the Messages API for Anthropic's own tools and services, which no stack serves. */
const UNSERVED = new Set(["container", "mcp_servers", "context_management", "top_k"]);

const TOP = new Set(["model", "messages", "max_tokens", "system", "stop_sequences", "stream", "temperature", "top_p", "tools", "tool_choice", "output_config", "service_tier"]);

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

/** An image block as an image part: base64 data as a `data:` URI, or a URL. */
function imageOf(block: Record<string, unknown>, path: string): ContentPart {
  checkKeys(block, path, ["type", "source"]);
  const source = block.source;
  if (!isPlainObject(source)) throw missing(`${path}.source`);
  if (source.type === "base64") {
    if (typeof source.media_type !== "string" || !/^image\/[a-z0-9.+-]+$/i.test(source.media_type)) throw invalid(`${path}.source.media_type`, `Invalid '${path}.source.media_type': expected an image type such as 'image/png'.`);
    if (typeof source.data !== "string") throw invalid(`${path}.source.data`, `Invalid type for '${path}.source.data': expected base64 text.`);
    return imagePart(`data:${source.media_type};base64,${source.data}`, undefined, { url: `${path}.source.data`, detail: path });
  }
  if (source.type === "url") {
    if (typeof source.url !== "string") throw invalid(`${path}.source.url`, `Invalid type for '${path}.source.url': expected a string.`);
    return imagePart(source.url, undefined, { url: `${path}.source.url`, detail: path });
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

/** One Messages-API message as the conversation's: tool results become tool messages (before the user's own words), tool uses become tool calls. */
function decodeMessage(m: unknown, i: number, into: Conversation): void {
  const at = `messages[${i}]`;
  if (!isPlainObject(m)) throw invalid(at, `Invalid type for '${at}': expected an object, but got ${describeValue(m)}.`);
  for (const k of Object.keys(m)) if (k !== "role" && k !== "content") throw unknown(`${at}.${k}`);
  if (m.role !== "user" && m.role !== "assistant") throw invalid(`${at}.role`, `Invalid value for '${at}.role': expected 'user' or 'assistant'.`);
  const push = (message: ChatMessage, place: MessagePlace = { at }) => {
    into.messages.push(message);
    into.places.push(place);
  };
  if (typeof m.content === "string") return push({ role: m.role, content: m.content });
  if (m.content === undefined || m.content === null) throw missing(`${at}.content`);
  if (!Array.isArray(m.content)) throw invalid(`${at}.content`, `Invalid type for '${at}.content': expected a string or an array of content blocks, but got ${describeValue(m.content)}.`);
  const parts: ContentPart[] = [];
  const calls: ToolCall[] = [];
  m.content.forEach((b: unknown, j) => {
    const p = `${at}.content[${j}]`;
    if (!isPlainObject(b)) throw invalid(p, `Invalid type for '${p}': expected an object, but got ${describeValue(b)}.`);
    switch (b.type) {
      case "text":
        parts.push({ type: "text", text: textOf(b, p), imageUrl: "", detail: "" });
        return;
      case "image":
        if (m.role !== "user") throw invalid(`${p}.type`, `Invalid value for '${p}.type': images are only allowed in user messages.`);
        into.images.push(`${p}.type`);
        parts.push(imageOf(b, p));
        return;
      case "tool_use": {
        if (m.role !== "assistant") throw invalid(`${p}.type`, `Invalid value for '${p}.type': 'tool_use' blocks belong to assistant messages.`);
        checkKeys(b, p, ["type", "id", "name", "input", "caller"]);
        if (!isPlainObject(b.input)) throw invalid(`${p}.input`, `Invalid type for '${p}.input': expected an object, but got ${describeValue(b.input)}.`);
        calls.push(toolCallOf({ id: b.id, name: b.name, arguments: JSON.stringify(b.input) }, { id: `${p}.id`, name: `${p}.name`, arguments: `${p}.input` }));
        return;
      }
      case "tool_result": {
        if (m.role !== "user") throw invalid(`${p}.type`, `Invalid value for '${p}.type': 'tool_result' blocks belong to user messages.`);
        checkKeys(b, p, ["type", "tool_use_id", "content", "is_error"]);
        if (typeof b.tool_use_id !== "string" || b.tool_use_id === "") throw missing(`${p}.tool_use_id`);
        if (b.is_error !== undefined && typeof b.is_error !== "boolean") throw invalid(`${p}.is_error`, `Invalid type for '${p}.is_error': expected a boolean.`);
        const text = toolResultText(b.content, `${p}.content`);
        push({ role: "tool", toolCallId: b.tool_use_id, content: b.is_error === true ? `Error: ${text}` : text }, { at: p, callId: `${p}.tool_use_id` });
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
  const content = parts.map((part) => part.text).join("");
  if (m.role === "assistant") return push(calls.length > 0 ? { role: "assistant", content, toolCalls: calls } : { role: "assistant", content });
  if (parts.length > 0) push(parts.some((part) => part.type === "image_url") ? { role: "user", content, parts } : { role: "user", content });
}

/** `tools`: `[{name, description?, input_schema, strict?}]` (Anthropic's own tool types refused), their values left to the domain's check. */
function decodeTools(tools: unknown): DraftTool[] {
  if (!Array.isArray(tools)) throw invalid("tools", `Invalid type for 'tools': expected an array, but got ${describeValue(tools)}.`);
  return tools.map((t: unknown, i) => {
    const p = `tools[${i}]`;
    if (!isPlainObject(t)) throw invalid(p, `Invalid type for '${p}': expected an object.`);
    if (t.type !== undefined && t.type !== null && t.type !== "custom") {
      throw new MakinaError("unsupported_parameter", `Tools of type '${String(t.type).slice(0, 64)}' (Anthropic's own) are not supported: describe your function with 'name' and 'input_schema'.`, { param: `${p}.type` });
    }
    for (const k of Object.keys(t)) if (!["name", "description", "input_schema", "strict"].includes(k) && !TOOL_NEUTRAL.has(k)) throw unknown(`${p}.${k}`);
    if (t.input_schema === undefined || t.input_schema === null) throw missing(`${p}.input_schema`);
    const part = (k: string) => ({ value: t[k], name: `${p}.${k}` });
    return { name: part("name"), description: part("description"), parameters: part("input_schema"), strict: part("strict") };
  });
}

/** `tool_choice`: `{type: auto | any | none | tool, name?, disable_parallel_tool_use?}`, with the parallel use it allows. */
function decodeToolChoice(choice: unknown): { choice: DraftToolChoice | undefined; parallel: unknown } {
  if (choice === undefined || choice === null) return { choice: undefined, parallel: undefined };
  if (!isPlainObject(choice)) throw invalid("tool_choice", `Invalid type for 'tool_choice': expected an object, but got ${describeValue(choice)}.`);
  for (const k of Object.keys(choice)) if (!["type", "name", "disable_parallel_tool_use"].includes(k)) throw unknown(`tool_choice.${k}`);
  const off = choice.disable_parallel_tool_use;
  // Parallel use allowed is its opposite; a value that is no boolean is left for the check to name.
  const parallel = typeof off === "boolean" ? !off : off;
  if (choice.type === "auto") return { choice: { mode: "auto" }, parallel };
  if (choice.type === "any") return { choice: { mode: "required" }, parallel };
  if (choice.type === "none") return { choice: { mode: "none" }, parallel };
  if (choice.type === "tool") {
    if (typeof choice.name !== "string") throw missing("tool_choice.name");
    return { choice: { mode: "function", function: choice.name, functionName: "tool_choice.name" }, parallel };
  }
  throw invalid("tool_choice.type", "Invalid value for 'tool_choice.type': expected one of 'auto', 'any', 'tool', 'none'.");
}

/** `output_config`: an effort (taken, without effect) and a JSON schema the answer must follow. */
function decodeOutputConfig(config: unknown): DraftResponseFormat | undefined {
  if (config === undefined || config === null) return undefined;
  if (!isPlainObject(config)) throw invalid("output_config", `Invalid type for 'output_config': expected an object, but got ${describeValue(config)}.`);
  for (const k of Object.keys(config)) if (k !== "effort" && k !== "format") throw unknown(`output_config.${k}`);
  const format = config.format;
  if (format === undefined || format === null) return undefined;
  const name = "output_config.format";
  if (!isPlainObject(format)) throw invalid(name, `Invalid type for '${name}': expected an object, but got ${describeValue(format)}.`);
  for (const k of Object.keys(format)) if (k !== "type" && k !== "schema") throw unknown(`${name}.${k}`);
  if (format.type !== "json_schema") throw invalid(`${name}.type`, `Invalid value for '${name}.type': expected 'json_schema'.`);
  // The API names no schema and always holds the answer to it.
  return { name, type: { value: "json_schema", name: `${name}.type` }, schemaName: { value: "output", name }, description: { value: undefined, name }, schema: { value: format.schema, name: `${name}.schema` }, strict: { value: true, name } };
}

/**
 * Reads a Messages API body and makes it the gateway's domain request through the one check of chat requests,
 * every refusal naming the field of the body sent.
 */
export function decodeMessagesRequest(body: unknown): ChatRequest {
  if (!isPlainObject(body)) throw refuse.notObject(body);
  for (const [k, v] of Object.entries(body)) {
    if (TOP.has(k) || NEUTRAL.has(k)) continue;
    if (UNSERVED.has(k)) {
      if (v === undefined || v === null) continue;
      throw refuse.unsupported(k, `The parameter '${k}' is not supported by this gateway.`);
    }
    throw unknown(k);
  }
  const model = modelOf(body.model, "model");
  if (body.max_tokens === undefined || body.max_tokens === null) throw missing("max_tokens");
  if (body.messages === undefined || body.messages === null) throw missing("messages");
  if (!Array.isArray(body.messages)) throw invalid("messages", `Invalid type for 'messages': expected an array, but got ${describeValue(body.messages)}.`);
  if (body.messages.length === 0) throw invalid("messages", "Invalid 'messages': empty array. Expected an array with minimum length 1.");
  const conversation: Conversation = { messages: [], places: [], images: [] };
  if (body.system !== undefined && body.system !== null) {
    conversation.messages.push({ role: "system", content: systemText(body.system) });
    conversation.places.push({ at: "system" });
  }
  body.messages.forEach((m, i) => decodeMessage(m, i, conversation));
  if (body.stream !== undefined && body.stream !== null) boolean(body.stream, "stream");
  const { choice, parallel } = decodeToolChoice(body.tool_choice);
  const format = decodeOutputConfig(body.output_config);
  const named = (name: string): Named => ({ value: body[name], name });
  // `auto`: the key's tier; `standard_only`: the key's, never priority.
  const tier = body.service_tier === undefined || body.service_tier === null ? undefined : (oneOf("auto", "standard_only")(body.service_tier, "service_tier"), body.service_tier as AskedTier);
  const request = checkChatRequest({
    model,
    modelName: "model",
    ...conversation,
    messagesName: "messages",
    stream: body.stream === true,
    // Its streams always end with their usage.
    includeUsage: true,
    temperature: named("temperature"),
    topP: named("top_p"),
    maxTokens: named("max_tokens"),
    stop: named("stop_sequences"),
    ...(body.tools === undefined || body.tools === null ? {} : { tools: { value: decodeTools(body.tools), name: "tools" } }),
    toolChoice: { value: choice, name: "tool_choice" },
    parallelToolCalls: { value: parallel, name: "tool_choice.disable_parallel_tool_use" },
    ...(format ? { responseFormat: format } : {}),
    needs: [],
  });
  if (tier) request.serviceTier = tier;
  // Anthropic's word for who a conversation is with: its requests go to one replica.
  const userId = isPlainObject(body.metadata) && typeof body.metadata.user_id === "string" && body.metadata.user_id !== "" ? body.metadata.user_id.slice(0, 1024) : undefined;
  if (userId) request.cacheKey = userId;
  return request;
}
