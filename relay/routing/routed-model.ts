import { compileRoutePattern, routePatternFound, ROUTER_PATTERNS_MAX_PROGRAM, type ChatMessage, type Logger, type RoutePattern, type RouteRule } from "../../proto/index.js";
import type { Stack } from "../store/index.js";

/** What the router's rules look at in a request. */
export interface RoutableRequest {
  messages: ChatMessage[];
  /** The request brings tools. */
  tools: boolean;
  /** A message of the request has an image part. */
  images: boolean;
}

/** The last user message, as text (a pattern looks at its first 4,096 characters). */
function lastUserText(messages: ChatMessage[]): string {
  for (let i = messages.length - 1; i >= 0; i--) if (messages[i]!.role === "user") return messages[i]!.content;
  return "";
}

/**
 * Each rule's pattern, compiled once: a stack's rules are the same objects for as long as the directory holds
 * the stack, and are forgotten with it. A pattern stored before RE2 was the engine, and that RE2 refuses,
 * matches nothing.
 */
export class RoutePatterns {
  private readonly compiled = new WeakMap<RouteRule, RoutePattern | null>();
  /** Each router's rules, checked once against the budget of all its patterns together. */
  private readonly budgets = new WeakMap<RouteRule[], boolean>();

  constructor(private readonly log?: Logger) {}

  of(rule: RouteRule & { pattern: string }): RoutePattern | null {
    let pattern = this.compiled.get(rule);
    if (pattern === undefined) {
      try {
        pattern = compileRoutePattern(rule.pattern);
      } catch (err) {
        this.log?.warn("a router rule's pattern is refused by RE2 and matches nothing", { model: rule.model, error: (err as Error).message });
        pattern = null;
      }
      this.compiled.set(rule, pattern);
    }
    return pattern;
  }

  /**
   * Whether a router's patterns together stay within {@link ROUTER_PATTERNS_MAX_PROGRAM} instructions (checked
   * at creation; a router stored before may not): one that does not has its patterns match nothing.
   */
  withinBudget(rules: RouteRule[]): boolean {
    let ok = this.budgets.get(rules);
    if (ok === undefined) {
      let program = 0;
      for (const rule of rules) if (rule.pattern !== undefined) program += this.of(rule as RouteRule & { pattern: string })?.programSize() ?? 0;
      ok = program <= ROUTER_PATTERNS_MAX_PROGRAM;
      if (!ok) this.log?.warn("a router's patterns together are over their budget; they match nothing", { instructions: program, budget: ROUTER_PATTERNS_MAX_PROGRAM });
      this.budgets.set(rules, ok);
    }
    return ok;
  }
}

function matches(rule: RouteRule, request: RoutableRequest, chars: () => number, patterns: RoutePatterns, patternsAllowed: boolean): boolean {
  if (rule.tools !== undefined && rule.tools !== request.tools) return false;
  if (rule.images !== undefined && rule.images !== request.images) return false;
  if (rule.min_chars !== undefined && chars() < rule.min_chars) return false;
  if (rule.max_chars !== undefined && chars() > rule.max_chars) return false;
  if (rule.pattern !== undefined) {
    const pattern = patternsAllowed ? patterns.of(rule as RouteRule & { pattern: string }) : null;
    if (!pattern || !routePatternFound(pattern, lastUserText(request.messages))) return false;
  }
  return true;
}

/**
 * The model id that answers a request sent to a stack with the `router` harness: the first rule whose
 * conditions all hold names it, else the router's `default`, else the stack's own model id. Undefined when the
 * stack has no router. The relay routes once: a router's target answers as it is.
 */
export function routedModel(stack: Stack, request: RoutableRequest, patterns: RoutePatterns): string | undefined {
  if (stack.harness !== "router") return undefined;
  const rules = (stack.harnessOptions.routes ?? []) as RouteRule[];
  const allowed = patterns.withinBudget(rules);
  let total = -1;
  const chars = () => (total >= 0 ? total : (total = request.messages.reduce((n, m) => n + m.content.length, 0)));
  for (const rule of rules) if (matches(rule, request, chars, patterns, allowed)) return rule.model;
  const fallback = stack.harnessOptions.default;
  return typeof fallback === "string" ? fallback : stack.modelId;
}
