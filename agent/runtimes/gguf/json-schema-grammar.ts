import type { GbnfJsonSchema, Llama, LlamaGrammar } from "node-llama-cpp";
import { MakinaError, type ResponseFormat } from "../../../proto/index.js";

/** What a JSON schema may say that a grammar can enforce; anything else is refused rather than ignored. */
const SUPPORTED = new Set([
  "type", "properties", "required", "additionalProperties", "items", "prefixItems", "minItems", "maxItems", "minProperties",
  "maxProperties", "enum", "const", "oneOf", "anyOf", "minLength", "maxLength", "format", "$defs", "definitions", "$ref",
  // Annotations: they say what a value means, not what it may be.
  "description", "title", "$schema", "$id", "$comment", "examples", "default", "deprecated", "readOnly", "writeOnly",
]);
const ANNOTATIONS = new Set(["title", "$schema", "$id", "$comment", "examples", "default", "deprecated", "readOnly", "writeOnly"]);
/** OpenAPI's extensions (`x-order`…): annotations by their name. */
const isExtension = (k: string) => k.startsWith("x-");

const RESPONSE_SCHEMA = "response_format.json_schema.schema";

/**
 * Refuses what a grammar cannot take: `param` is the request's path to it in the domain's terms
 * (`response_format.json_schema.schema.properties.code.pattern`), which the relay names in the client's API; the
 * text names the place inside the schema (`properties.code.pattern`), the same in every API.
 */
export function refuse(path: string, message: string, root = path): MakinaError {
  const inside = path.startsWith(root) ? path.slice(root.length).replace(/^\./, "") : path;
  return new MakinaError("invalid_value", inside ? `Invalid schema at '${inside}': ${message}` : `Invalid schema: ${message}`, { param: path });
}

/**
 * OpenAI's JSON schema in the dialect node-llama-cpp turns into a grammar: `anyOf` becomes `oneOf`,
 * `definitions` becomes `$defs`, annotations go, and an object's `additionalProperties` is false unless the
 * schema says otherwise (as OpenAI's strict mode requires). A keyword the grammar cannot enforce (`pattern`,
 * `minimum`, `allOf`…) is refused with 400 `invalid_value` whose `param` is its path in the request, never silently
 * dropped. `path` is the schema's own path (`tools[0].function.parameters`), `root` the whole schema's (a refusal's
 * text names the place inside it).
 */
export function toGrammarSchema(schema: unknown, path: string, root = path): GbnfJsonSchema {
  if (typeof schema === "boolean") {
    if (schema) return { type: ["string", "number", "boolean", "null"] } as GbnfJsonSchema;
    throw refuse(path, "`false` matches nothing.", root);
  }
  if (typeof schema !== "object" || schema === null || Array.isArray(schema)) throw refuse(path, "expected an object.", root);
  const split = splitByType(schema as Record<string, unknown>);
  if (split) return toGrammarSchema(split, path, root);
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(schema)) {
    if (isExtension(k)) continue;
    if (!SUPPORTED.has(k)) throw refuse(`${path}.${k}`, `the keyword '${k}' cannot be enforced by this model's runtime.`, root);
    if (ANNOTATIONS.has(k)) continue;
    if (k === "properties" || k === "$defs" || k === "definitions") {
      if (typeof v !== "object" || v === null || Array.isArray(v)) throw refuse(`${path}.${k}`, "expected an object.", root);
      out[k === "definitions" ? "$defs" : k] = Object.fromEntries(Object.entries(v).map(([name, sub]) => [name, toGrammarSchema(sub, `${path}.${k}.${name}`, root)]));
    } else if (k === "items" || (k === "additionalProperties" && typeof v === "object")) {
      out[k] = toGrammarSchema(v, `${path}.${k}`, root);
    } else if (k === "prefixItems" || k === "oneOf" || k === "anyOf") {
      if (!Array.isArray(v)) throw refuse(`${path}.${k}`, "expected an array.", root);
      out[k === "anyOf" ? "oneOf" : k] = v.map((sub, i) => toGrammarSchema(sub, `${path}.${k}[${i}]`, root));
    } else if (k === "$ref") {
      if (typeof v !== "string" || !/^#\/(\$defs|definitions)\/[^/]+$/.test(v)) throw refuse(`${path}.$ref`, "only references to #/$defs/NAME are supported.", root);
      out.$ref = v.replace("#/definitions/", "#/$defs/");
    } else {
      out[k] = v;
    }
  }
  if (out.type === "object" && out.additionalProperties === undefined) out.additionalProperties = false;
  return out as GbnfJsonSchema;
}

/** Keywords that apply to one type only. */
const TYPE_KEYWORDS: Record<string, readonly string[]> = {
  string: ["minLength", "maxLength", "format"],
  object: ["properties", "required", "additionalProperties", "minProperties", "maxProperties"],
  array: ["items", "prefixItems", "minItems", "maxItems"],
};

/**
 * `{"type": ["string", "null"], "maxLength": 12}` as alternatives, one per type, each with its own keywords: a
 * grammar enforces a type's keywords only on a schema of that single type (else `maxLength` would be lost).
 * Null when the schema has one type, or no keyword specific to a type.
 */
function splitByType(schema: Record<string, unknown>): Record<string, unknown> | null {
  if (!Array.isArray(schema.type) || schema.type.length < 2) return null;
  const specific = Object.values(TYPE_KEYWORDS).flat();
  if (!Object.keys(schema).some((k) => specific.includes(k))) return null;
  const common = Object.fromEntries(Object.entries(schema).filter(([k]) => k !== "type" && !specific.includes(k)));
  const alternatives = (schema.type as unknown[]).map((type) => ({
    type,
    ...Object.fromEntries(Object.entries(schema).filter(([k]) => (TYPE_KEYWORDS[String(type)] ?? []).includes(k))),
  }));
  return { ...common, oneOf: alternatives };
}

/**
 * Makes and keeps the grammars that hold a model to a response format: the JSON grammar for `json_object`,
 * one made from the schema for `json_schema` (the last 32 schemas are kept; making one costs milliseconds).
 */
export class ResponseGrammars {
  private readonly bySchema = new Map<string, Promise<LlamaGrammar>>();
  private json: Promise<LlamaGrammar> | undefined;

  constructor(private readonly llama: Llama) {}

  for(format: ResponseFormat): Promise<LlamaGrammar> {
    if (format.type === "json_object") return (this.json ??= this.llama.getGrammarFor("json"));
    if (format.type !== "json_schema") throw new MakinaError("unsupported_parameter", `The response format '${String(format.type)}' is not supported by this model's runtime.`, { param: "response_format.type" });
    let grammar = this.bySchema.get(format.schemaJson);
    if (!grammar) {
      let schema: unknown;
      try {
        schema = JSON.parse(format.schemaJson);
      } catch {
        throw refuse(RESPONSE_SCHEMA, "not JSON.");
      }
      const converted = toGrammarSchema(schema, RESPONSE_SCHEMA);
      // The schema is only known at run time: its TypeScript type (which types the parsed output) is left open.
      grammar = this.llama.createGrammarForJsonSchema(converted as never).catch((err: unknown) => {
        this.bySchema.delete(format.schemaJson);
        throw refuse(RESPONSE_SCHEMA, (err as Error).message);
      }) as Promise<LlamaGrammar>;
      if (this.bySchema.size >= 32) this.bySchema.delete(this.bySchema.keys().next().value!);
      this.bySchema.set(format.schemaJson, grammar);
    }
    return grammar;
  }
}
