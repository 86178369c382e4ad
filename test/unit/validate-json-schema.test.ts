import { describe, expect, it } from "vitest";
import { MakinaError } from "../../proto/index.js";
import { decodeChatRequest } from "../../relay/http/openai/index.js";
import { toGrammarSchema } from "../../agent/runtimes/gguf/json-schema-grammar.js";
import { SCHEMA_LIMITS } from "../../relay/http/chat/validate-json-schema.js";

const ok = { model: "m", messages: [{ role: "user", content: "hi" }] };
const withTool = (parameters: unknown, strict = true) => ({ ...ok, tools: [{ type: "function", function: { name: "f", parameters, strict } }] });
const withFormat = (schema: unknown) => ({ ...ok, response_format: { type: "json_schema", json_schema: { name: "out", schema } } });

function refusal(body: unknown): { status: number; code: string; param: string | null; message: string } {
  try {
    decodeChatRequest(body);
  } catch (err) {
    expect(err).toBeInstanceOf(MakinaError);
    const e = err as MakinaError;
    return { status: e.mapping.http, code: e.mapping.openaiCode, param: e.param, message: e.message };
  }
  throw new Error("expected the request to be refused");
}

/** An object schema whose one property `p` nests `levels` objects deep in all. */
function nested(levels: number): Record<string, unknown> {
  let schema: Record<string, unknown> = { type: "string" };
  for (let i = 1; i < levels; i++) schema = { type: "object", properties: { p: schema } };
  return { type: "object", properties: { p: schema } };
}

describe("JSON schemas in requests", () => {
  const P = "tools[0].function.parameters";
  const R = "response_format.json_schema.schema";
  it.each([
    // The cases: an unknown type, a `required` that is no list, a negative length, a missing definition.
    [{ type: "object", properties: { a: { type: "nonsense" } } }, `${P}.properties.a.type`, "is not a JSON Schema type"],
    [{ type: "object", properties: { a: { type: "string" } }, required: "a" }, `${P}.required`, "list of property names"],
    [{ type: "object", properties: { a: { type: "string", maxLength: -1 } } }, `${P}.properties.a.maxLength`, "non-negative integer"],
    [{ type: "object", properties: { a: { $ref: "#/$defs/missing" } } }, `${P}.properties.a.$ref`, "points at no schema"],
    [{ type: "object", properties: { a: { type: ["string", "string"] } } }, `${P}.properties.a.type`, "listed twice"],
    [{ type: "object", properties: { a: { type: [] } } }, `${P}.properties.a.type`, "cannot be empty"],
    [{ type: "object", properties: "a" }, `${P}.properties`, "object of schemas"],
    [{ type: "object", properties: { a: 5 } }, `${P}.properties.a`, "object or a boolean"],
    [{ type: "object", properties: { "a b": { type: "string", minLength: 1.5 } } }, `${P}.properties["a b"].minLength`, "non-negative integer"],
    [{ type: "object", properties: { a: { type: "string", minLength: 5, maxLength: 2 } } }, `${P}.properties.a.minLength`, "greater than 'maxLength'"],
    [{ type: "object", properties: { a: { type: "number", minimum: 3, maximum: 1 } } }, `${P}.properties.a.minimum`, "greater than 'maximum'"],
    [{ type: "object", properties: { a: { type: "number", multipleOf: 0 } } }, `${P}.properties.a.multipleOf`, "greater than 0"],
    [{ type: "object", properties: { a: { type: "number", minimum: "1" } } }, `${P}.properties.a.minimum`, "expected a number"],
    [{ type: "object", properties: { a: { type: "string", pattern: "([a-z" } } }, `${P}.properties.a.pattern`, "not a valid regular expression"],
    [{ type: "object", properties: { a: { enum: [] } } }, `${P}.properties.a.enum`, "non-empty list"],
    [{ type: "object", properties: { a: { anyOf: [] } } }, `${P}.properties.a.anyOf`, "non-empty list of schemas"],
    [{ type: "object", properties: { a: { anyOf: [{ type: "string" }, { type: "vector" }] } } }, `${P}.properties.a.anyOf[1].type`, "is not a JSON Schema type"],
    [{ type: "object", properties: { a: { type: "array", items: { type: "object", required: [1] } } } }, `${P}.properties.a.items.required`, "list of property names"],
    [{ type: "object", properties: { a: { $ref: "https://example.com/schema.json" } } }, `${P}.properties.a.$ref`, "only references inside the schema"],
    [{ type: "object", properties: { a: { $dynamicRef: "#node" } } }, `${P}.properties.a.$dynamicRef`, "not supported"],
    [{ type: "object", properties: { a: { type: "string", description: 7 } } }, `${P}.properties.a.description`, "expected a string"],
    [{ type: "object", $defs: { d: { type: "integer", maximum: Number.NaN } } }, `${P}.$defs.d.maximum`, "expected a number"],
    [{ type: "object", properties: { a: { $ref: "#/%" } } }, `${P}.properties.a.$ref`, "points at no schema"],
  ])("refuses the tool parameters %j at %s", (schema, param, words) => {
    const r = refusal(withTool(schema));
    expect(r).toMatchObject({ status: 400, code: "invalid_value", param });
    expect(r.message).toContain(words);
    expect(r.message).toContain(`'${param}'`);
  });

  it("refuses the same faults in a response format, under its own path", () => {
    expect(refusal(withFormat({ type: "object", properties: { a: { type: "nonsense" } } }))).toMatchObject({ status: 400, code: "invalid_value", param: `${R}.properties.a.type` });
    expect(refusal(withFormat({ type: "object", properties: { a: { $ref: "#/definitions/gone" } } }))).toMatchObject({ param: `${R}.properties.a.$ref` });
    expect(refusal(withFormat({ type: "array", items: { type: "string", maxLength: -3 } }))).toMatchObject({ param: `${R}.items.maxLength` });
  });

  it("holds the vendor's limits: 10 levels of nesting, 5,000 properties, 1,000 enum values, 15,000 characters in a long enum", () => {
    expect(() => decodeChatRequest(withFormat(nested(SCHEMA_LIMITS.depth - 1)))).not.toThrow();
    expect(refusal(withFormat(nested(SCHEMA_LIMITS.depth))).message).toContain("nested more than 10 levels deep");

    // Each property as `"p123":{}`, to fit the 64 KiB a schema may take as JSON.
    const properties = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`p${i}`, {}]));
    expect(() => decodeChatRequest(withFormat({ type: "object", properties: properties(1000) }))).not.toThrow();
    const many = { type: "object", properties: Object.fromEntries(Array.from({ length: 6 }, (_, i) => [`o${i}`, { type: "object", properties: properties(900) }])) };
    expect(refusal(withFormat(many)).message).toContain("more than 5000 properties");

    const enums = { type: "object", properties: { a: { enum: Array.from({ length: 600 }, (_, i) => i) }, b: { enum: Array.from({ length: 600 }, (_, i) => i) } } };
    expect(refusal(withFormat(enums))).toMatchObject({ param: `${R}.properties.b.enum` });
    const longEnum = { type: "object", properties: { a: { enum: Array.from({ length: 300 }, (_, i) => `value-${i}-${"x".repeat(50)}`) } } };
    expect(refusal(withFormat(longEnum)).message).toContain("more than 250 values");
  });

  it("holds a tool that is not strict to the standard only: deep nesting, long enums and Python-flavoured patterns pass, as tool generators write them", () => {
    const loose = (schema: unknown) => () => decodeChatRequest(withTool(schema, false));
    expect(loose(nested(SCHEMA_LIMITS.depth + 5))).not.toThrow();
    expect(loose({ type: "object", properties: { tz: { enum: Array.from({ length: 1200 }, (_, i) => `Zone/${i}`) } } })).not.toThrow();
    expect(loose({ type: "object", properties: { id: { type: "string", pattern: "(?P<year>\\d{4})" } } })).not.toThrow();
    // What no runtime can take is refused all the same.
    expect(() => decodeChatRequest(withTool({ type: "object", properties: { a: { type: "nonsense" } } }, false))).toThrow(MakinaError);
    expect(() => decodeChatRequest(withTool(nested(40), false))).toThrow("schemas nested more than 32 deep");
  });

  it("takes the schemas real tools send: refs to definitions, recursion, tuples, draft-4 bounds, annotations, unknown keywords", () => {
    const tree = {
      type: "object",
      $defs: { node: { type: "object", properties: { value: { type: "string" }, children: { type: "array", items: { $ref: "#/$defs/node" } } }, required: ["value"] } },
      properties: { root: { $ref: "#/$defs/node" }, again: { $ref: "#/properties/root" }, self: { $ref: "#" } },
      additionalProperties: false,
    };
    expect(() => decodeChatRequest(withTool(tree))).not.toThrow();
    expect(() => decodeChatRequest(withFormat(tree))).not.toThrow();
    const mixed = {
      $schema: "http://json-schema.org/draft-07/schema#",
      type: "object",
      title: "Query",
      properties: {
        when: { type: ["string", "null"], format: "date-time", nullable: true, deprecated: false },
        point: { type: "array", items: [{ type: "number" }, { type: "number" }], minItems: 2, maxItems: 2 },
        limit: { type: "integer", minimum: 1, maximum: 100, exclusiveMaximum: true, default: 10, examples: [5] },
        tag: { type: "string", pattern: "^[a-z]+$", "x-order": 3 },
        mode: { enum: ["fast", "careful", null] },
        fixed: { const: "v1" },
        either: { oneOf: [{ type: "string" }, { type: "integer" }] },
      },
      patternProperties: { "^meta_": { type: "string" } },
      required: ["tag"],
    };
    expect(() => decodeChatRequest(withTool(mixed))).not.toThrow();
    expect(() => decodeChatRequest(withTool(true))).toThrow(); // parameters describe an object, not a boolean
    expect(() => decodeChatRequest(withFormat({}))).not.toThrow();
  });
});

describe("JSON schemas on the GGUF runtime", () => {
  it("reads extensions and the annotations the relay lets through as annotations, and names the path of a keyword it cannot enforce", () => {
    const schema = { type: "object", properties: { a: { type: "string", deprecated: true, readOnly: false, "x-order": 1 } }, "x-generator": "zod" };
    expect(toGrammarSchema(schema, "tools[0].function.parameters")).toEqual({ type: "object", properties: { a: { type: "string" } }, additionalProperties: false });
    expect(() => toGrammarSchema({ type: "object", properties: { a: { type: "number", minimum: 0 } } }, "p")).toThrow(
      expect.objectContaining({ param: "p.properties.a.minimum", message: "Invalid schema at 'properties.a.minimum': the keyword 'minimum' cannot be enforced by this model's runtime." }),
    );
  });
});
