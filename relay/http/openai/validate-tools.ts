import { MakinaError, type ChatMessage, type ToolCall, type ToolChoice, type ToolDefinition } from "../../../proto/index.js";
import { isPlainObject } from "../json-values.js";
import { validateJsonSchema } from "./validate-json-schema.js";

/** A request's tools, as the link carries them. */
export interface ToolsRequest {
  tools: ToolDefinition[];
  toolChoice: ToolChoice;
  /** The function `tool_choice` names; empty otherwise. */
  toolChoiceFunction: string;
  /** `parallel_tool_calls`; undefined when not given (yes). */
  parallelToolCalls: boolean | undefined;
}

/** Most tools a request may bring, as OpenAI allows. */
const MAX_TOOLS = 128;
/** Largest JSON schema of one function's parameters, as JSON text. */
const MAX_PARAMETERS_CHARS = 64 * 1024;
/** A function's name: what OpenAI accepts. */
const NAME = /^[A-Za-z0-9_-]{1,64}$/;

const invalid = (param: string, message: string) => new MakinaError("invalid_value", message, { param });
const missing = (param: string) => new MakinaError("missing_required_parameter", `Missing required parameter: '${param}'.`, { param });
const unknown = (param: string) => new MakinaError("unknown_parameter", `Unrecognized request argument supplied: ${param}`, { param });

function only(o: Record<string, unknown>, keys: readonly string[], param: string): void {
  for (const k of Object.keys(o)) if (!keys.includes(k)) throw unknown(`${param}.${k.slice(0, 64)}`);
}

/** One entry of `tools`: `{type: "function", function: {name, description?, parameters?, strict?}}`. */
function toolDefinition(v: unknown, i: number): ToolDefinition {
  const p = `tools[${i}]`;
  if (!isPlainObject(v)) throw invalid(p, `Invalid type for '${p}': expected an object.`);
  only(v, ["type", "function"], p);
  if (v.type === undefined || v.type === null) throw missing(`${p}.type`);
  if (v.type !== "function") throw invalid(`${p}.type`, `Invalid value for '${p}.type': expected 'function'.`);
  if (v.function === undefined || v.function === null) throw missing(`${p}.function`);
  if (!isPlainObject(v.function)) throw invalid(`${p}.function`, `Invalid type for '${p}.function': expected an object.`);
  const f = v.function;
  const fp = `${p}.function`;
  only(f, ["name", "description", "parameters", "strict"], fp);
  if (f.name === undefined || f.name === null) throw missing(`${fp}.name`);
  if (typeof f.name !== "string" || !NAME.test(f.name)) throw invalid(`${fp}.name`, `Invalid '${fp}.name': 1 to 64 letters, digits, underscores or dashes.`);
  let description = "";
  if (f.description !== undefined && f.description !== null) {
    if (typeof f.description !== "string" || f.description.length > 4096) throw invalid(`${fp}.description`, `Invalid '${fp}.description': a string of at most 4096 characters.`);
    description = f.description;
  }
  let strict = false;
  if (f.strict !== undefined && f.strict !== null) {
    if (typeof f.strict !== "boolean") throw invalid(`${fp}.strict`, `Invalid type for '${fp}.strict': expected a boolean.`);
    strict = f.strict;
  }
  let parametersJson = "";
  if (f.parameters !== undefined && f.parameters !== null) {
    if (!isPlainObject(f.parameters)) throw invalid(`${fp}.parameters`, `Invalid type for '${fp}.parameters': expected a JSON schema object.`);
    if (f.parameters.type !== undefined && f.parameters.type !== "object") throw invalid(`${fp}.parameters`, `Invalid '${fp}.parameters': the schema must describe an object ("type": "object").`);
    parametersJson = JSON.stringify(f.parameters);
    if (parametersJson.length > MAX_PARAMETERS_CHARS) throw invalid(`${fp}.parameters`, `Invalid '${fp}.parameters': larger than ${MAX_PARAMETERS_CHARS} characters as JSON.`);
    validateJsonSchema(f.parameters, `${fp}.parameters`, { strict: f.strict === true });
  }
  return { name: f.name, description, parametersJson, strict };
}

/**
 * Reads `tools`, `tool_choice` and `parallel_tool_calls` as OpenAI does: function tools with unique names;
 * `tool_choice` only with tools, a named function only among them. Undefined when the request brings no tools
 * (an empty array is no tools).
 */
export function validateTools(body: Record<string, unknown>): ToolsRequest | undefined {
  const raw = body.tools;
  const choice = body.tool_choice;
  const parallel = body.parallel_tool_calls;
  const hasTools = Array.isArray(raw) && raw.length > 0;
  if (!hasTools) {
    if (choice !== undefined && choice !== null && choice !== "none" && choice !== "auto") throw invalid("tool_choice", "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.");
    return undefined;
  }
  const list = raw as unknown[];
  if (list.length > MAX_TOOLS) throw invalid("tools", `Invalid 'tools': at most ${MAX_TOOLS} tools are allowed.`);
  const tools = list.map(toolDefinition);
  const names = new Set<string>();
  tools.forEach((t, i) => {
    if (names.has(t.name)) throw invalid(`tools[${i}].function.name`, `Invalid 'tools': the function name '${t.name}' is given twice.`);
    names.add(t.name);
  });
  let toolChoice: ToolChoice = "auto";
  let toolChoiceFunction = "";
  if (typeof choice === "string") {
    toolChoice = choice as ToolChoice;
  } else if (isPlainObject(choice)) {
    only(choice, ["type", "function"], "tool_choice");
    if (choice.type !== "function") throw invalid("tool_choice.type", "Invalid value for 'tool_choice.type': expected 'function'.");
    if (!isPlainObject(choice.function)) throw missing("tool_choice.function");
    only(choice.function, ["name"], "tool_choice.function");
    const name = choice.function.name;
    if (typeof name !== "string") throw missing("tool_choice.function.name");
    if (!names.has(name)) throw invalid("tool_choice.function.name", `Invalid value for 'tool_choice': the function '${name.slice(0, 64)}' is not among the request's tools.`);
    toolChoice = "function";
    toolChoiceFunction = name;
  }
  return { tools, toolChoice, toolChoiceFunction, parallelToolCalls: typeof parallel === "boolean" ? parallel : undefined };
}

/** An assistant message's `tool_calls`: `[{id, type: "function", function: {name, arguments}}]`. */
export function messageToolCalls(v: unknown, i: number): ToolCall[] {
  const p = `messages[${i}].tool_calls`;
  if (!Array.isArray(v)) throw invalid(p, `Invalid type for '${p}': expected an array.`);
  return v.map((c: unknown, j): ToolCall => {
    const cp = `${p}[${j}]`;
    if (!isPlainObject(c)) throw invalid(cp, `Invalid type for '${cp}': expected an object.`);
    if (typeof c.id !== "string" || c.id === "" || c.id.length > 256) throw c.id === undefined || c.id === null ? missing(`${cp}.id`) : invalid(`${cp}.id`, `Invalid '${cp}.id': a string of 1 to 256 characters.`);
    if (c.type !== undefined && c.type !== "function") throw invalid(`${cp}.type`, `Invalid value for '${cp}.type': expected 'function'.`);
    if (!isPlainObject(c.function)) throw missing(`${cp}.function`);
    const { name, arguments: args } = c.function;
    if (typeof name !== "string" || !NAME.test(name)) throw invalid(`${cp}.function.name`, `Invalid '${cp}.function.name': 1 to 64 letters, digits, underscores or dashes.`);
    if (typeof args !== "string") throw missing(`${cp}.function.arguments`);
    try {
      JSON.parse(args);
    } catch {
      throw invalid(`${cp}.function.arguments`, `Invalid '${cp}.function.arguments': not JSON.`);
    }
    return { id: c.id, name, arguments: args };
  });
}

/**
 * Holds a conversation's tool messages to OpenAI's rules: each answers a call of an earlier assistant message,
 * and every call an assistant message made is answered before the conversation goes on.
 */
export function checkToolTurns(messages: ChatMessage[]): void {
  let open: Set<string> | undefined;
  messages.forEach((m, i) => {
    if (m.role === "tool") {
      if (!open?.delete(m.toolCallId!)) {
        throw invalid(`messages[${i}].tool_call_id`, `Invalid parameter: messages with role 'tool' must be a response to a preceding message with 'tool_calls' (no open call '${m.toolCallId!.slice(0, 64)}').`);
      }
      return;
    }
    if (open?.size) {
      throw invalid(`messages[${i}]`, `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${[...open].join(", ").slice(0, 512)}`);
    }
    open = m.toolCalls ? new Set(m.toolCalls.map((c) => c.id)) : undefined;
  });
}
