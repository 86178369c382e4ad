import { MakinaError } from "../../../proto/index.js";

/**
 * The limits the vendor documents for the schemas of structured outputs, held for every schema a request
 * brings (tool parameters and response formats), whichever runtime serves it.
 */
export const SCHEMA_LIMITS = {
  /** Values nested in values (properties, items), the root's being the first. */
  depth: 10,
  /** Any schema inside another (`anyOf` in `items` in `properties`…): what a grammar's recursion goes through. */
  schemaDepth: 32,
  properties: 5000,
  enumValues: 1000,
  /** Property names, definition names, enum and const strings, added up. */
  nameChars: 120_000,
  /** A string enum of more than 250 values: its strings added up. */
  largeEnumChars: 15_000,
} as const;

const TYPES = new Set(["string", "number", "integer", "boolean", "object", "array", "null"]);

/** Keywords whose value is a map of names to schemas. */
const SCHEMA_MAPS = new Set(["properties", "patternProperties", "$defs", "definitions", "dependentSchemas"]);
/** Keywords whose value is one schema; those under `VALUE_NESTING` hold a nested value (a level deeper). */
const SCHEMA_ONE = new Set(["additionalProperties", "additionalItems", "unevaluatedProperties", "unevaluatedItems", "items", "contains", "propertyNames", "not", "if", "then", "else"]);
const VALUE_NESTING = new Set(["properties", "patternProperties", "additionalProperties", "additionalItems", "unevaluatedProperties", "unevaluatedItems", "items", "prefixItems", "contains"]);
/** Keywords whose value is a non-empty list of schemas. */
const SCHEMA_LISTS = new Set(["allOf", "anyOf", "oneOf", "prefixItems"]);
const COUNTS = new Set(["minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties", "minContains", "maxContains"]);
const BOUNDS = new Set(["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"]);
const STRINGS = new Set(["title", "description", "format", "$schema", "$id", "$anchor", "$comment", "contentEncoding", "contentMediaType"]);
const BOOLEANS = new Set(["uniqueItems", "deprecated", "readOnly", "writeOnly", "nullable"]);
/** JSON Schema's dynamic references: no runtime we drive resolves them. */
const UNSUPPORTED = new Set(["$dynamicRef", "$dynamicAnchor", "$recursiveRef", "$recursiveAnchor", "$vocabulary"]);
/** Pairs whose first may not exceed the second. */
const ORDERED: readonly [string, string][] = [
  ["minLength", "maxLength"],
  ["minItems", "maxItems"],
  ["minProperties", "maxProperties"],
  ["minContains", "maxContains"],
  ["minimum", "maximum"],
];

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Where a keyword is, written when asked (`response_format.json_schema.schema.properties.age.minimum`). */
type Where = () => string;

/** `name` as a path segment: `.name` when it reads as one, `["name"]` otherwise. */
function segment(name: string): string {
  return /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(name) ? `.${name}` : `[${JSON.stringify(name.length > 64 ? `${name.slice(0, 64)}…` : name)}]`;
}

function compiles(pattern: string): boolean {
  // Compiled only, never run: JSON Schema's patterns are ECMA-262 expressions, and the runtime enforces them.
  for (const flags of ["u", ""]) {
    try {
      new RegExp(pattern, flags);
      return true;
    } catch {
      // tried without the `u` flag next
    }
  }
  return false;
}

/** Resolves a JSON pointer (`#/$defs/item`, `#/properties/a/items`) within `root`; undefined when nothing is there. */
function resolvePointer(root: unknown, ref: string): unknown {
  if (ref === "#") return root;
  let node: unknown = root;
  for (const raw of ref.slice(2).split("/")) {
    let key: string;
    try {
      key = decodeURIComponent(raw).replaceAll("~1", "/").replaceAll("~0", "~");
    } catch {
      return undefined;
    }
    if (Array.isArray(node) && /^(0|[1-9]\d*)$/.test(key)) node = node[Number(key)];
    else if (isPlainObject(node) && Object.hasOwn(node, key)) node = node[key];
    else return undefined;
  }
  return node;
}

/**
 * Checks a JSON schema a request brings before any runtime turns it into a grammar or a prompt: every keyword's
 * value has its type and range (`type` a JSON type, `required` a list of names, `maxLength` a count, `minimum`
 * not above `maximum`), every `$ref` points inside the schema at a schema, and the vendor's limits hold (10
 * levels of nesting, 5,000 properties, 1,000 enum values, 120,000 characters of names). Keywords JSON Schema
 * does not define are left alone, as the standard says (a runtime that cannot enforce one refuses it). Throws
 * 400 `invalid_value` whose `param` is the path to the offending keyword, under `param`.
 *
 * The vendor's limits and the check that a `pattern` compiles as JavaScript hold where the vendor holds them:
 * for `strict` schemas (response formats, and tools marked `strict`). A tool's schema otherwise only describes
 * its arguments to the model, so deep schemas, long enums and Python-flavoured patterns (`(?P<name>…)`) that
 * tool generators write are taken; 32 schemas inside one another is the bound for every schema.
 */
export function validateJsonSchema(schema: unknown, param: string, options: { strict: boolean }): void {
  const tally = { properties: 0, enumValues: 0, nameChars: 0 };
  // A keyword's path is written only when it is refused: most schemas are fine, and checked on every request.
  const refuse = (where: Where, message: string) => {
    const path = where();
    return new MakinaError("invalid_value", `Invalid schema for '${param}' at '${path}': ${message}`, { param: path });
  };
  const countName = (path: Where, name: string) => {
    tally.nameChars += name.length;
    if (tally.nameChars > SCHEMA_LIMITS.nameChars) throw refuse(path, `property names, definition names and enum values add up to more than ${SCHEMA_LIMITS.nameChars} characters.`);
  };

  const visit = (node: unknown, path: Where, depth: number, schemaDepth: number): void => {
    if (typeof node === "boolean") return;
    if (!isPlainObject(node)) throw refuse(path, "a schema is an object or a boolean.");
    if (options.strict && depth > SCHEMA_LIMITS.depth) throw refuse(path, `nested more than ${SCHEMA_LIMITS.depth} levels deep.`);
    if (schemaDepth > SCHEMA_LIMITS.schemaDepth) throw refuse(path, `schemas nested more than ${SCHEMA_LIMITS.schemaDepth} deep.`);
    for (const [key, value] of Object.entries(node)) {
      const at = () => `${path()}${segment(key)}`;
      const deeper = VALUE_NESTING.has(key) ? depth + 1 : depth;
      if (UNSUPPORTED.has(key)) throw refuse(at, `the keyword '${key}' is not supported.`);
      if (key === "type") {
        const types = Array.isArray(value) ? value : [value];
        if (types.length === 0) throw refuse(at, "a list of types cannot be empty.");
        for (const t of types) {
          if (typeof t !== "string" || !TYPES.has(t)) throw refuse(at, `${JSON.stringify(t)?.slice(0, 40) ?? String(t)} is not a JSON Schema type (${[...TYPES].join(", ")}).`);
        }
        if (new Set(types).size !== types.length) throw refuse(at, "a type is listed twice.");
      } else if (SCHEMA_MAPS.has(key)) {
        if (!isPlainObject(value)) throw refuse(at, "expected an object of schemas.");
        for (const [name, sub] of Object.entries(value)) {
          if (options.strict && key === "properties" && ++tally.properties > SCHEMA_LIMITS.properties) throw refuse(at, `more than ${SCHEMA_LIMITS.properties} properties in all.`);
          if (options.strict && key === "patternProperties" && !compiles(name)) throw refuse(at, `${JSON.stringify(name.slice(0, 64))} is not a valid regular expression.`);
          if (options.strict && key !== "patternProperties") countName(at, name);
          visit(sub, () => `${at()}${segment(name)}`, key === "$defs" || key === "definitions" ? 1 : deeper, schemaDepth + 1);
        }
      } else if (SCHEMA_ONE.has(key)) {
        // Draft 4 to 7 wrote a tuple as a list under `items`.
        if (key === "items" && Array.isArray(value)) value.forEach((sub, i) => visit(sub, () => `${at()}[${i}]`, deeper, schemaDepth + 1));
        else visit(value, at, deeper, schemaDepth + 1);
      } else if (SCHEMA_LISTS.has(key)) {
        if (!Array.isArray(value) || value.length === 0) throw refuse(at, "expected a non-empty list of schemas.");
        value.forEach((sub, i) => visit(sub, () => `${at()}[${i}]`, deeper, schemaDepth + 1));
      } else if (key === "required") {
        if (!Array.isArray(value) || value.some((v) => typeof v !== "string")) throw refuse(at, "expected a list of property names.");
        if (new Set(value).size !== value.length) throw refuse(at, "a property is listed twice.");
      } else if (key === "dependentRequired") {
        if (!isPlainObject(value) || Object.values(value).some((v) => !Array.isArray(v) || v.some((n) => typeof n !== "string"))) throw refuse(at, "expected an object of lists of property names.");
      } else if (key === "enum") {
        if (!Array.isArray(value) || value.length === 0) throw refuse(at, "expected a non-empty list of values.");
        if (options.strict) {
          tally.enumValues += value.length;
          if (tally.enumValues > SCHEMA_LIMITS.enumValues) throw refuse(at, `more than ${SCHEMA_LIMITS.enumValues} enum values in all.`);
          const strings = value.filter((v): v is string => typeof v === "string");
          const chars = strings.reduce((n, s) => n + s.length, 0);
          if (value.length > 250 && chars > SCHEMA_LIMITS.largeEnumChars) throw refuse(at, `an enum of more than 250 values may hold at most ${SCHEMA_LIMITS.largeEnumChars} characters.`);
          for (const s of strings) countName(at, s);
        }
      } else if (key === "const") {
        if (options.strict && typeof value === "string") countName(at, value);
      } else if (COUNTS.has(key)) {
        if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0) throw refuse(at, "expected a non-negative integer.");
      } else if (BOUNDS.has(key)) {
        // Draft 4 wrote the exclusive bounds as booleans beside `minimum` and `maximum`.
        const draft4 = (key === "exclusiveMinimum" || key === "exclusiveMaximum") && typeof value === "boolean";
        if (!draft4 && (typeof value !== "number" || !Number.isFinite(value))) throw refuse(at, "expected a number.");
      } else if (key === "multipleOf") {
        if (typeof value !== "number" || !Number.isFinite(value) || value <= 0) throw refuse(at, "expected a number greater than 0.");
      } else if (key === "pattern") {
        if (typeof value !== "string") throw refuse(at, "expected a regular expression as a string.");
        if (options.strict && !compiles(value)) throw refuse(at, "not a valid regular expression.");
      } else if (STRINGS.has(key)) {
        if (typeof value !== "string") throw refuse(at, "expected a string.");
      } else if (BOOLEANS.has(key)) {
        if (typeof value !== "boolean") throw refuse(at, "expected a boolean.");
      } else if (key === "examples") {
        if (!Array.isArray(value)) throw refuse(at, "expected a list.");
      } else if (key === "$ref") {
        if (typeof value !== "string") throw refuse(at, "expected a reference as a string.");
        if (value !== "#" && !value.startsWith("#/")) throw refuse(at, "only references inside the schema (#/$defs/NAME) are supported.");
        const target = resolvePointer(schema, value);
        if (typeof target !== "boolean" && !isPlainObject(target)) throw refuse(at, `${JSON.stringify(value.slice(0, 128))} points at no schema.`);
      }
    }
    for (const [low, high] of ORDERED) {
      const a = node[low];
      const b = node[high];
      if (typeof a === "number" && typeof b === "number" && a > b) throw refuse(() => `${path()}${segment(low)}`, `'${low}' (${a}) is greater than '${high}' (${b}).`);
    }
  };

  visit(schema, () => param, 1, 0);
}
