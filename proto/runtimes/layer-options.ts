import { MakinaError } from "../errors/index.js";
import { compileRoutePattern, ROUTE_PATTERN_MAX_CHARS, ROUTER_PATTERNS_MAX_PROGRAM } from "./route-pattern.js";

/** One rule of the router harness: the first whose conditions all hold sends the request to `model`. */
export interface RouteRule {
  /** The model id (of the same organization) that answers when the rule matches. */
  model: string;
  /** The request's messages hold at least / at most this many characters in all. */
  min_chars?: number;
  max_chars?: number;
  /** A regular expression (RE2 syntax, case-insensitive) found in the first 4,096 characters of the last user message. */
  pattern?: string;
  /** The request brings tools (true) or none (false). */
  tools?: boolean;
  /** A message of the request has an image (true), or none has (false). */
  images?: boolean;
}

/** A layer option's value. */
export type LayerOptionValue = string | number | boolean | RouteRule[];

/** What one option of a layer kind takes. */
export interface LayerOptionSpec {
  type: "string" | "number" | "integer" | "boolean" | "routes";
  min?: number;
  max?: number;
  maxLength?: number;
  required?: boolean;
  /** What it does, for `--help`, the Forge and errors. */
  describe: string;
}

/**
 * The options each layer kind takes (`--harness-option key=value`, `harness_options` in the admin API, the
 * Forge). Shared by the relay, which checks them when a stack is created, and the agent, which applies them.
 */
export const LAYER_OPTIONS: Readonly<Record<string, Readonly<Record<string, LayerOptionSpec>>>> = Object.freeze({
  "system-prompt": {
    prompt: { type: "string", maxLength: 32_768, required: true, describe: "The system prompt, used when a request has no system message of its own" },
    temperature: { type: "number", min: 0, max: 2, describe: "Sampling temperature when the request sets none" },
    top_p: { type: "number", min: 0, max: 1, describe: "Nucleus sampling when the request sets none" },
    max_tokens: { type: "integer", min: 1, max: 16_777_216, describe: "Most tokens in an answer when the request sets no max_tokens" },
  },
  tools: {
    parallel_tool_calls: { type: "boolean", describe: "Whether one answer may call several tools, when the request does not say [default: true]" },
  },
  router: {
    routes: {
      type: "routes",
      required: true,
      describe:
        'Rules, first match wins, as JSON: [{"model": ID, "min_chars"?: N, "max_chars"?: N, "pattern"?: REGEX, "tools"?: true|false, "images"?: true|false}]; each condition given must hold',
    },
    default: { type: "string", maxLength: 256, describe: "The model id that answers when no rule matches [default: this stack's own]" },
  },
  refine: {
    rounds: { type: "integer", min: 1, max: 4, describe: "Critique-and-revise rounds after the draft [default: 1]" },
    critique_prompt: { type: "string", maxLength: 8192, describe: "What the model is asked to critique the draft with [default: a request for the draft's errors and omissions]" },
    revise_prompt: { type: "string", maxLength: 8192, describe: "What the model is asked to revise the draft with [default: a request for an improved answer that heeds the critique]" },
  },
  vote: {
    samples: { type: "integer", min: 2, max: 8, describe: "Answers sampled; the one most consistent with the others wins [default: 3]" },
    temperature: { type: "number", min: 0, max: 2, describe: "Sampling temperature of the samples when the request sets none [default: 0.8]" },
  },
});

/** Refine's rounds when its options set none. */
export const DEFAULT_REFINE_ROUNDS = 1;
/** Vote's samples when its options set none. */
export const DEFAULT_VOTE_SAMPLES = 3;

/**
 * How many times an orchestrator runs its model for one request (1 without one): refine drafts once and
 * critiques and revises each round; vote samples. The relay allows for that many steps when it estimates a
 * request's tokens and checks the usage a machine reports.
 */
export function orchestratorSteps(orchestrator: string | null, options: Record<string, LayerOptionValue>): number {
  if (orchestrator === "refine") return 1 + 2 * (typeof options.rounds === "number" ? options.rounds : DEFAULT_REFINE_ROUNDS);
  if (orchestrator === "vote") return typeof options.samples === "number" ? options.samples : DEFAULT_VOTE_SAMPLES;
  return 1;
}

const ROUTE_KEYS = new Set(["model", "min_chars", "max_chars", "pattern", "tools", "images"]);

/** Checks the router's rules: at most 32, each with a model and known conditions, patterns that compile. */
function routeRules(raw: unknown, param: string): RouteRule[] {
  let value = raw;
  if (typeof value === "string") {
    try {
      value = JSON.parse(value) as unknown;
    } catch {
      throw new MakinaError("invalid_value", `'${param}' must be a JSON array of rules.`, { param });
    }
  }
  if (!Array.isArray(value) || value.length === 0 || value.length > 32) throw new MakinaError("invalid_value", `'${param}' must be an array of 1 to 32 rules.`, { param });
  // The instructions of the rules' patterns so far (their matching cost per character).
  let program = 0;
  return value.map((rule: unknown, i): RouteRule => {
    const p = `${param}[${i}]`;
    if (typeof rule !== "object" || rule === null || Array.isArray(rule)) throw new MakinaError("invalid_value", `'${p}' must be an object.`, { param: p });
    const r = rule as Record<string, unknown>;
    for (const k of Object.keys(r)) if (!ROUTE_KEYS.has(k)) throw new MakinaError("invalid_value", `'${p}' has no condition '${k}'; a rule takes model, min_chars, max_chars, pattern, tools, images.`, { param: `${p}.${k}` });
    if (typeof r.model !== "string" || r.model === "" || r.model.length > 256) throw new MakinaError("invalid_value", `'${p}.model' must be a model id.`, { param: `${p}.model` });
    const out: RouteRule = { model: r.model };
    for (const k of ["min_chars", "max_chars"] as const) {
      if (r[k] === undefined) continue;
      if (!Number.isInteger(r[k]) || (r[k] as number) < 0) throw new MakinaError("invalid_value", `'${p}.${k}' must be a whole number of characters.`, { param: `${p}.${k}` });
      out[k] = r[k] as number;
    }
    if (r.pattern !== undefined) {
      if (typeof r.pattern !== "string" || r.pattern === "" || r.pattern.length > ROUTE_PATTERN_MAX_CHARS) {
        throw new MakinaError("invalid_value", `'${p}.pattern' must be a regular expression of at most ${ROUTE_PATTERN_MAX_CHARS} characters.`, { param: `${p}.pattern` });
      }
      try {
        program += compileRoutePattern(r.pattern).programSize();
      } catch (err) {
        throw new MakinaError("invalid_value", `'${p}.pattern' ${(err as Error).message}`, { param: `${p}.pattern` });
      }
      if (program > ROUTER_PATTERNS_MAX_PROGRAM) {
        throw new MakinaError("invalid_value", `'${param}' patterns together compile to more than ${ROUTER_PATTERNS_MAX_PROGRAM} instructions; use fewer or simpler patterns.`, { param: `${p}.pattern` });
      }
      out.pattern = r.pattern;
    }
    for (const k of ["tools", "images"] as const) {
      if (r[k] === undefined) continue;
      if (typeof r[k] !== "boolean") throw new MakinaError("invalid_value", `'${p}.${k}' must be true or false.`, { param: `${p}.${k}` });
      out[k] = r[k];
    }
    return out;
  });
}

/**
 * Checks a layer's options against its kind: known names, the right types and ranges, required ones given.
 * Values given as text (`key=value` on the command line) are read as their type. Throws `invalid_value`
 * naming `param.name`.
 */
export function validateLayerOptions(kind: string, options: unknown, param: string): Record<string, LayerOptionValue> {
  const specs = LAYER_OPTIONS[kind];
  const given = options ?? {};
  if (typeof given !== "object" || Array.isArray(given)) throw new MakinaError("invalid_value", `'${param}' must be an object of option names to values.`, { param });
  if (!specs) {
    if (Object.keys(given).length) throw new MakinaError("invalid_value", `The layer '${kind}' takes no options.`, { param });
    return {};
  }
  const out: Record<string, LayerOptionValue> = {};
  for (const [name, raw] of Object.entries(given as Record<string, unknown>)) {
    const spec = specs[name];
    const p = `${param}.${name}`;
    if (!spec) {
      const known = Object.keys(specs);
      throw new MakinaError("invalid_value", `The ${kind} layer has no option '${name}'${known.length ? `; it takes ${known.join(", ")}` : "; it takes none"}.`, { param: p });
    }
    out[name] = optionValue(spec, raw, p);
  }
  for (const [name, spec] of Object.entries(specs)) {
    if (spec.required && out[name] === undefined) throw new MakinaError("invalid_value", `The ${kind} layer needs the option '${name}': ${spec.describe.toLowerCase()}.`, { param: `${param}.${name}` });
  }
  return out;
}

function optionValue(spec: LayerOptionSpec, raw: unknown, param: string): LayerOptionValue {
  const bad = (what: string) => new MakinaError("invalid_value", `'${param}' must be ${what}.`, { param });
  if (spec.type === "routes") return routeRules(raw, param);
  if (spec.type === "string") {
    if (typeof raw !== "string" || raw.trim() === "") throw bad("a non-empty string");
    if (spec.maxLength && raw.length > spec.maxLength) throw bad(`at most ${spec.maxLength} characters`);
    return raw;
  }
  if (spec.type === "boolean") {
    if (raw === true || raw === "true") return true;
    if (raw === false || raw === "false") return false;
    throw bad("true or false");
  }
  const n = typeof raw === "string" && raw.trim() !== "" ? Number(raw) : raw;
  const range = `${spec.min ?? "-∞"} to ${spec.max ?? "∞"}`;
  if (typeof n !== "number" || !Number.isFinite(n) || (spec.type === "integer" && !Number.isInteger(n))) throw bad(`${spec.type === "integer" ? "an integer" : "a number"} from ${range}`);
  if ((spec.min !== undefined && n < spec.min) || (spec.max !== undefined && n > spec.max)) throw bad(`${spec.type === "integer" ? "an integer" : "a number"} from ${range}`);
  return n;
}
