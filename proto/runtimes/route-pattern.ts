import { RE2JS } from "re2js";

/**
 * A router rule's `pattern`, run by RE2 (the `re2js` package, a JavaScript port of RE2): matching takes time
 * linear in the text and the pattern, whatever the pattern. JavaScript's own engine backtracks, and a pattern
 * such as `^(a+)+$` over 40 `a`s and a `!` kept the relay's only thread busy for hours, stalling every
 * organization's gateway, the admin API and the links' heartbeats. RE2 has no lookaround and no
 * backreferences; a pattern that uses them is refused when the stack is created.
 *
 * Chosen over the `re2` package (native code: built from source wherever no prebuilt binary can be downloaded)
 * and V8's linear engine (behind a flag, and without case-insensitive matching in Node 20).
 */
export type RoutePattern = RE2JS;

/** The characters of the last user message a pattern looks at: its first 4,096. */
export const ROUTE_PATTERN_TEXT_CHARS = 4096;
/** The longest pattern, in characters. */
export const ROUTE_PATTERN_MAX_CHARS = 256;
/**
 * The most instructions a pattern may compile to, and a router's patterns together: matching costs at most
 * about text × instructions steps, so a request to a router costs at most 4,096 × 1,024 steps (tens of ms on
 * the slowest patterns, see docs/layers.md). `\b(code|python|sql)\b` is 21 instructions; `[a-z]{1,100}` is 200.
 */
export const ROUTE_PATTERN_MAX_PROGRAM = 256;
export const ROUTER_PATTERNS_MAX_PROGRAM = 1024;

/** Compiles a pattern, case-insensitive; throws an Error whose message says what is wrong with it. */
export function compileRoutePattern(pattern: string): RoutePattern {
  let compiled: RE2JS;
  try {
    compiled = RE2JS.compile(pattern, RE2JS.CASE_INSENSITIVE);
  } catch (err) {
    throw new Error(`is not a regular expression the router accepts (RE2 syntax: no lookaround or backreferences): ${(err as Error).message}`);
  }
  if (compiled.programSize() > ROUTE_PATTERN_MAX_PROGRAM) {
    throw new Error(`is too complex: it compiles to ${compiled.programSize()} instructions, at most ${ROUTE_PATTERN_MAX_PROGRAM} are allowed (repeat counts such as {1,100} cost one instruction per repeat)`);
  }
  return compiled;
}

/** Whether the pattern is found in the first {@link ROUTE_PATTERN_TEXT_CHARS} characters of `text`. */
export function routePatternFound(pattern: RoutePattern, text: string): boolean {
  return pattern.matcher(text.length > ROUTE_PATTERN_TEXT_CHARS ? text.slice(0, ROUTE_PATTERN_TEXT_CHARS) : text).find();
}
