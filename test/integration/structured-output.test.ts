import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { schemaProblems } from "../helpers/json-schema-check.js";
import { startTestGateway, type TestGateway } from "../helpers/test-gateway.js";

/** Schemas of the kinds clients send: flat, nested objects, enums, arrays, nullable, alternatives, definitions. */
const SCHEMAS: Record<string, Record<string, unknown>> = {
  person: {
    type: "object",
    properties: { name: { type: "string", maxLength: 24 }, age: { type: "integer" }, member: { type: "boolean" } },
    required: ["name", "age", "member"],
    additionalProperties: false,
  },
  nested: {
    type: "object",
    properties: {
      order: {
        type: "object",
        properties: { id: { type: "integer" }, shipping: { type: "object", properties: { city: { type: "string", maxLength: 16 }, express: { type: "boolean" } }, required: ["city", "express"] } },
        required: ["id", "shipping"],
      },
    },
    required: ["order"],
  },
  enums: {
    type: "object",
    properties: { mood: { enum: ["happy", "sad", "calm"] }, level: { type: "string", enum: ["low", "high"] }, score: { enum: [1, 2, 3] } },
    required: ["mood", "level", "score"],
  },
  arrays: {
    type: "object",
    properties: {
      tags: { type: "array", items: { type: "string", maxLength: 10 }, minItems: 1, maxItems: 3 },
      points: { type: "array", items: { type: "object", properties: { x: { type: "number" }, y: { type: "number" } }, required: ["x", "y"] }, maxItems: 2 },
    },
    required: ["tags", "points"],
  },
  nullable: {
    type: "object",
    properties: { nickname: { type: ["string", "null"], maxLength: 12 }, answer: { anyOf: [{ type: "integer" }, { const: "unknown" }] } },
    required: ["nickname", "answer"],
  },
  definitions: {
    type: "object",
    $defs: { step: { type: "object", properties: { action: { enum: ["go", "stop"] }, seconds: { type: "integer" } }, required: ["action", "seconds"] } },
    properties: { steps: { type: "array", items: { $ref: "#/$defs/step" }, maxItems: 3 } },
    required: ["steps"],
  },
};

describe("structured output on the GGUF runtime: response_format held by a grammar", () => {
  let gw: TestGateway;
  let client: OpenAI;
  beforeAll(async () => {
    gw = await startTestGateway();
    client = new OpenAI({ baseURL: gw.baseURL, apiKey: gw.apiKey, maxRetries: 0 });
  });
  afterAll(async () => {
    await gw?.close();
  });

  const format = (name: string, schema: Record<string, unknown>) => ({ type: "json_schema" as const, json_schema: { name, schema, strict: true } });

  it("answers JSON that parses and follows each schema, with the official client", async () => {
    for (const [name, schema] of Object.entries(SCHEMAS)) {
      const res = await client.chat.completions.create({
        model: gw.modelId,
        messages: [{ role: "user", content: `Give me a ${name}.` }],
        max_tokens: 300,
        temperature: 0,
        response_format: format(name, schema),
      });
      const choice = res.choices[0]!;
      expect([name, choice.finish_reason]).toEqual([name, "stop"]);
      const value = JSON.parse(choice.message.content!) as unknown;
      expect([name, schemaProblems(schema, value)]).toEqual([name, []]);
    }
  });

  it("streams the same JSON as chunks that join to a parsable answer", async () => {
    const schema = SCHEMAS.enums!;
    const body = { model: gw.modelId, messages: [{ role: "user" as const, content: "How are you?" }], max_tokens: 100, temperature: 0, response_format: format("enums", schema) };
    const whole = (await client.chat.completions.create(body)).choices[0]!.message.content!;
    let streamed = "";
    let chunks = 0;
    for await (const c of await client.chat.completions.create({ ...body, stream: true })) {
      streamed += c.choices[0]?.delta.content ?? "";
      chunks++;
    }
    expect(chunks).toBeGreaterThan(3);
    expect(streamed).toBe(whole);
    expect(schemaProblems(schema, JSON.parse(streamed))).toEqual([]);
  });

  it("holds json_object answers to JSON from the first character", async () => {
    const res = await client.chat.completions.create({ model: gw.modelId, messages: [{ role: "user", content: "Reply in JSON." }], max_tokens: 40, temperature: 0, response_format: { type: "json_object" } });
    expect(res.choices[0]!.message.content!.trimStart().startsWith("{")).toBe(true);
  });

  it("refuses, with the keyword named, a schema a grammar cannot enforce, and malformed response formats", async () => {
    const pattern = await client.chat.completions
      .create({ model: gw.modelId, messages: [{ role: "user", content: "x" }], response_format: format("code", { type: "object", properties: { code: { type: "string", pattern: "^[A-Z]{3}$" } } }) })
      .catch((e: unknown) => e);
    expect(pattern).toMatchObject({
      status: 400,
      code: "invalid_value",
      param: "response_format.json_schema.schema.properties.code.pattern",
      error: { message: "Invalid schema at 'properties.code.pattern': the keyword 'pattern' cannot be enforced by this model's runtime." },
    });
    const bad = async (response_format: unknown) => {
      const res = await fetch(`${gw.baseURL}/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${gw.apiKey}`, "content-type": "application/json" },
        body: JSON.stringify({ model: gw.modelId, messages: [{ role: "user", content: "x" }], response_format }),
      });
      return [res.status, ((await res.json()) as { error: { code: string; param: string } }).error];
    };
    expect(await bad({ type: "json_schema" })).toEqual([400, expect.objectContaining({ code: "missing_required_parameter", param: "response_format.json_schema" })]);
    expect(await bad({ type: "json_schema", json_schema: { schema: {} } })).toEqual([400, expect.objectContaining({ code: "missing_required_parameter", param: "response_format.json_schema.name" })]);
    expect(await bad({ type: "json_schema", json_schema: { name: "a b", schema: {} } })).toEqual([400, expect.objectContaining({ code: "invalid_value", param: "response_format.json_schema.name" })]);
    expect(await bad({ type: "json_schema", json_schema: { name: "n", schema: [] } })).toEqual([400, expect.objectContaining({ code: "invalid_value", param: "response_format.json_schema.schema" })]);
    expect(await bad({ type: "json_object", json_schema: {} })).toEqual([400, expect.objectContaining({ code: "unknown_parameter", param: "response_format.json_schema" })]);
  });
});
