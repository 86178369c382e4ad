import type { ChatMessage, ResponseFormat, ToolChoice, ToolDefinition } from "../../../proto/index.js";
import { refuse } from "../json-values.js";
import type { ChatDraft, DraftResponseFormat, DraftTool, MessagePlace, Named } from "./chat-draft.js";
import type { ChatRequest } from "./chat-request.js";
import { boolean, FUNCTION_NAME, integer, number, object, oneOf, string, type ValueCheck } from "./chat-values.js";
import { validateJsonSchema } from "./validate-json-schema.js";

/**
 * The largest `max_tokens` any stack can take: far beyond any model's context (2^24 tokens), and within
 * the link's uint32, so a request the relay lets through can always reach its machine.
 */
export const MAX_COMPLETION_TOKENS = 16_777_216;

/** Most stop sequences a request may give (the vendor's limit). */
const MAX_STOP = 4;
/** Most tools a request may bring, as the vendor allows. */
const MAX_TOOLS = 128;
/** Largest JSON schema of one function's parameters, or of a response format, as JSON text. */
const MAX_SCHEMA_CHARS = 64 * 1024;

const { invalid, missing } = refuse;

/** Whether the client gave the value (undefined and null are not given). */
const given = (n: Named | undefined): boolean => n !== undefined && n.value !== undefined && n.value !== null;

/** A value given, checked; `fallback` when not given. */
function optional<T>(n: Named | undefined, check: ValueCheck, fallback: T): T {
  if (n === undefined || !given(n)) return fallback;
  check(n.value, n.name);
  return n.value as T;
}

/**
 * The one check of a chat request, whichever API it came in: the values' ranges, the conversation's tool turns,
 * the tools and the choice among them, the response format, and what the stack's runtime must honour. Each
 * refusal names the client's own field, from the names the API's decoder gave ({@link ChatDraft}); what the
 * plan and the runtime refuse later is named the same way, through the request's `paramName`.
 */
export function checkChatRequest(d: ChatDraft): ChatRequest {
  // What the runtime must honour, and each one's name in the client's API (for the plan's refusal).
  const needs: string[] = [];
  const needNames: string[] = [];
  const need = (id: string, name: string) => {
    needs.push(id);
    needNames.push(name);
  };

  if (d.messages.length === 0) throw invalid(d.messagesName, `Invalid '${d.messagesName}': empty array. Expected an array with minimum length 1.`);
  checkToolTurns(d.messages, d.places);
  const temperature = optional(d.temperature, number(0, 2), 1);
  const topP = optional(d.topP, number(0, 1), 1);
  const maxTokens = optional(d.maxTokens, integer(1, MAX_COMPLETION_TOKENS), 0);
  const seed = optional<number | undefined>(d.seed, integer(0, 0xffffffff), undefined);
  const presencePenalty = optional(d.presencePenalty, number(-2, 2), 0);
  if (presencePenalty !== 0) need("presence_penalty", d.presencePenalty!.name);
  const frequencyPenalty = optional(d.frequencyPenalty, number(-2, 2), 0);
  if (frequencyPenalty !== 0) need("frequency_penalty", d.frequencyPenalty!.name);
  const stop = d.stop && given(d.stop) ? stopSequences(d.stop) : [];

  const tools = d.tools && Array.isArray(d.tools.value) && d.tools.value.length > 0 ? toolDefinitions(d.tools as Named<DraftTool[]>) : undefined;
  if (tools) need("tools", d.tools!.name);
  const choice = toolChoice(d, tools);
  if (choice.toolChoice === "required" || choice.toolChoice === "function") need("tool_choice", d.toolChoice!.name);
  const parallelToolCalls = optional<boolean | undefined>(d.parallelToolCalls, boolean, undefined);
  const format = d.responseFormat ? responseFormat(d.responseFormat) : undefined;
  if (format) need("response_format", d.responseFormat!.name);
  // Images are a need like any parameter: the stack's runtime must take them.
  if (d.images.length) need("image_url", d.images[0]!);
  for (const extra of d.needs) need(extra.value, extra.name);

  return {
    model: d.model,
    includeUsage: d.includeUsage,
    imagePart: d.images[0],
    needs,
    // Worked out only when a refusal asks: nothing of it is made for a request that is served.
    paramName: (param) => clientName(d, needs, needNames, tools !== undefined, param),
    input: {
      messages: d.messages,
      temperature,
      topP,
      maxTokens,
      stop,
      seed,
      presencePenalty,
      frequencyPenalty,
      stream: d.stream,
      ...(format ? { responseFormat: format } : {}),
      unset: [given(d.temperature) ? "" : "temperature", given(d.topP) ? "" : "top_p"].filter(Boolean),
      ...(tools ? { tools, ...choice, parallelToolCalls } : {}),
    },
  };
}

/** The client's name of a parameter of the domain the plan or the runtime refused; one it did not name stays as it is. */
function clientName(d: ChatDraft, needs: readonly string[], needNames: readonly string[], withTools: boolean, param: string): string {
  const i = needs.indexOf(param);
  if (i >= 0) return needNames[i]!;
  if (param === "model") return d.modelName;
  if (param === "messages") return d.messagesName;
  if (param === "max_tokens" && d.maxTokens) return d.maxTokens.name;
  if (param === "response_format" && d.responseFormat) return d.responseFormat.name;
  if (param === "response_format.type" && d.responseFormat) return d.responseFormat.type.name;
  return nameInside(schemasOf(d, withTools), param);
}

/**
 * Where each of the request's schemas is, by its domain path (`tools[0].function.parameters`,
 * `response_format.json_schema.schema`) and the client's; made only when a refusal asks.
 */
function schemasOf(d: ChatDraft, withTools: boolean): Map<string, string> {
  const schemas = new Map<string, string>();
  if (withTools) d.tools!.value.forEach((t, i) => schemas.set(`tools[${i}].function.parameters`, t.parameters.name));
  if (d.responseFormat) schemas.set("response_format.json_schema.schema", d.responseFormat.schema.name);
  return schemas;
}

/**
 * The client's name of a place inside one of the request's schemas (`tools[0].function.parameters.properties.a`
 * inside `tools[0].function.parameters`, which the Messages API names `tools[0].input_schema`); anything else stays
 * as it is.
 */
function nameInside(schemas: ReadonlyMap<string, string>, param: string): string {
  const root = schemas.get(param);
  if (root !== undefined) return root;
  let best = "";
  for (const domain of schemas.keys()) {
    if (domain.length > best.length && param.startsWith(domain) && (param[domain.length] === "." || param[domain.length] === "[")) best = domain;
  }
  return best ? schemas.get(best)! + param.slice(best.length) : param;
}

/** `stop`: a string or up to four, each of 1 to 1,024 characters. */
function stopSequences({ value, name }: Named): string[] {
  let stop: string[];
  if (typeof value === "string") stop = [value];
  else if (Array.isArray(value) && value.every((s) => typeof s === "string")) stop = value as string[];
  else throw invalid(name, `Invalid type for '${name}': expected a string or an array of strings.`);
  if (stop.length > MAX_STOP) throw invalid(name, `Invalid '${name}': at most ${MAX_STOP} are allowed.`);
  if (stop.some((s) => s === "" || s.length > 1024)) throw invalid(name, `Invalid '${name}': each must be 1 to 1024 characters.`);
  return stop;
}

/**
 * Holds a conversation's tool results to the vendors' rules: each answers a call of an earlier assistant message,
 * and every call an assistant message made is answered before the conversation goes on.
 */
function checkToolTurns(messages: ChatMessage[], places: MessagePlace[]): void {
  let open: Set<string> | undefined;
  messages.forEach((m, i) => {
    const place = places[i]!;
    if (m.role === "tool") {
      if (!open?.delete(m.toolCallId!)) {
        const at = place.callId ?? place.at;
        throw invalid(at, `Invalid '${at}': a tool result must answer a call of the assistant message before it (no open call '${m.toolCallId!.slice(0, 64)}').`);
      }
      return;
    }
    if (open?.size) {
      throw invalid(place.at, `Invalid '${place.at}': an assistant message's tool calls must each be answered by a tool result before the conversation goes on. These calls have none: ${[...open].join(", ").slice(0, 512)}`);
    }
    open = m.toolCalls ? new Set(m.toolCalls.map((c) => c.id)) : undefined;
  });
}

/** The functions the model may call: at most 128, with unique names, their schemas within the vendor's limits. */
function toolDefinitions({ value: list, name }: Named<DraftTool[]>): ToolDefinition[] {
  if (list.length > MAX_TOOLS) throw invalid(name, `Invalid '${name}': at most ${MAX_TOOLS} tools are allowed.`);
  const seen = new Set<string>();
  return list.map((t) => {
    if (!given(t.name)) throw missing(t.name.name);
    if (typeof t.name.value !== "string" || !FUNCTION_NAME.test(t.name.value)) throw invalid(t.name.name, `Invalid '${t.name.name}': 1 to 64 letters, digits, underscores or dashes.`);
    if (seen.has(t.name.value)) throw invalid(t.name.name, `Invalid '${name}': the function name '${t.name.value}' is given twice.`);
    seen.add(t.name.value);
    const description = optional(t.description, (v, n) => {
      if (typeof v !== "string" || v.length > 4096) throw invalid(n, `Invalid '${n}': a string of at most 4096 characters.`);
    }, "");
    const strict = optional(t.strict, boolean, false);
    let parametersJson = "";
    if (given(t.parameters)) {
      const { value: schema, name: at } = t.parameters;
      if (typeof schema !== "object" || schema === null || Array.isArray(schema)) throw invalid(at, `Invalid type for '${at}': expected a JSON schema object.`);
      if ((schema as { type?: unknown }).type !== undefined && (schema as { type?: unknown }).type !== "object") throw invalid(at, `Invalid '${at}': the schema must describe an object ("type": "object").`);
      parametersJson = JSON.stringify(schema);
      if (parametersJson.length > MAX_SCHEMA_CHARS) throw invalid(at, `Invalid '${at}': larger than ${MAX_SCHEMA_CHARS} characters as JSON.`);
      validateJsonSchema(schema, at, { strict });
    }
    return { name: t.name.value, description, parametersJson, strict };
  });
}

/** The tool choice: only with tools (beyond `none` and `auto`), and a named function only among them. */
function toolChoice(d: ChatDraft, tools: ToolDefinition[] | undefined): { toolChoice: ToolChoice; toolChoiceFunction: string } {
  const choice = d.toolChoice?.value;
  if (!choice) return { toolChoice: "auto", toolChoiceFunction: "" };
  const name = d.toolChoice!.name;
  if (!tools) {
    if (choice.mode === "none" || choice.mode === "auto") return { toolChoice: "auto", toolChoiceFunction: "" };
    throw invalid(name, `Invalid value for '${name}': it is only allowed when '${d.tools?.name ?? "tools"}' are specified.`);
  }
  if (choice.mode !== "function") return { toolChoice: choice.mode, toolChoiceFunction: "" };
  if (!tools.some((t) => t.name === choice.function)) throw invalid(choice.functionName, `Invalid value for '${name}': the function '${choice.function.slice(0, 64)}' is not among the request's tools.`);
  return { toolChoice: "function", toolChoiceFunction: choice.function };
}

/** The answer's shape: free text (undefined), any JSON object, or JSON following a schema within the vendor's limits. */
function responseFormat(f: DraftResponseFormat): ResponseFormat | undefined {
  oneOf("text", "json_object", "json_schema")(f.type.value, f.type.name);
  if (f.type.value === "text") return undefined;
  if (f.type.value === "json_object") return { type: "json_object", name: "", schemaJson: "", strict: false };
  if (!given(f.schemaName)) throw missing(f.schemaName.name);
  if (typeof f.schemaName.value !== "string" || !FUNCTION_NAME.test(f.schemaName.value)) throw invalid(f.schemaName.name, `Invalid '${f.schemaName.name}': 1 to 64 letters, digits, underscores or dashes.`);
  optional(f.description, string(4096), "");
  const strict = optional(f.strict, boolean, false);
  const schema = given(f.schema) ? f.schema.value : {};
  object(schema, f.schema.name);
  const schemaJson = JSON.stringify(schema);
  if (schemaJson.length > MAX_SCHEMA_CHARS) throw invalid(f.schema.name, `Invalid '${f.schema.name}': larger than ${MAX_SCHEMA_CHARS} characters as JSON.`);
  // A response format is held to its schema by a grammar or guided decoding, strict or not: the vendor's limits hold.
  validateJsonSchema(schema, f.schema.name, { strict: true });
  return { type: "json_schema", name: f.schemaName.value, schemaJson, strict };
}
