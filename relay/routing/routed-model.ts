import type { ChatMessage, RouteRule } from "../../proto/index.js";
import type { Stack } from "../store/index.js";

/** What the router's rules look at in a request. */
export interface RoutableRequest {
  messages: ChatMessage[];
  /** The request brings tools. */
  tools: boolean;
  /** A message of the request has an image part. */
  images: boolean;
}

/** The last user message, as text; a pattern looks at its first 64 Ki characters. */
function lastUserText(messages: ChatMessage[]): string {
  for (let i = messages.length - 1; i >= 0; i--) if (messages[i]!.role === "user") return messages[i]!.content.slice(0, 65_536);
  return "";
}

function matches(rule: RouteRule, request: RoutableRequest, chars: () => number): boolean {
  if (rule.tools !== undefined && rule.tools !== request.tools) return false;
  if (rule.images !== undefined && rule.images !== request.images) return false;
  if (rule.min_chars !== undefined && chars() < rule.min_chars) return false;
  if (rule.max_chars !== undefined && chars() > rule.max_chars) return false;
  if (rule.pattern !== undefined && !new RegExp(rule.pattern, "i").test(lastUserText(request.messages))) return false;
  return true;
}

/**
 * The model id that answers a request sent to a stack with the `router` harness: the first rule whose
 * conditions all hold names it, else the router's `default`, else the stack's own model id. Undefined when the
 * stack has no router. The relay routes once: a router's target answers as it is.
 */
export function routedModel(stack: Stack, request: RoutableRequest): string | undefined {
  if (stack.harness !== "router") return undefined;
  const rules = (stack.harnessOptions.routes ?? []) as RouteRule[];
  let total = -1;
  const chars = () => (total >= 0 ? total : (total = request.messages.reduce((n, m) => n + m.content.length, 0)));
  for (const rule of rules) if (matches(rule, request, chars)) return rule.model;
  const fallback = stack.harnessOptions.default;
  return typeof fallback === "string" ? fallback : stack.modelId;
}
