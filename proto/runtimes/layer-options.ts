import { MakinaError } from "../errors/index.js";

/** A layer option's value. */
export type LayerOptionValue = string | number | boolean;

/** What one option of a layer kind takes. */
export interface LayerOptionSpec {
  type: "string" | "number" | "integer" | "boolean";
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
  tools: {},
  router: {},
});

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
