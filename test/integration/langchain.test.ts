import { ChatOpenAI } from "@langchain/openai";
import { AIMessage, HumanMessage, ToolMessage } from "@langchain/core/messages";
import { tool } from "@langchain/core/tools";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { startTestGateway, type TestGateway } from "../helpers/test-gateway.js";

/**
 * LangChain's OpenAI chat model, unchanged, against a GGUF stack: only the base URL and the key differ from
 * what a user writes for the vendor. `withStructuredOutput` sends a JSON schema as `response_format` (or, by
 * `functionCalling`, as a function it must call); `bindTools` sends `tools` and reads `tool_calls` back.
 */
describe("LangChain against a GGUF stack with the tools harness", () => {
  let gw: TestGateway;
  const model = "lc-tools";
  const chat = (extra: Record<string, unknown> = {}) =>
    new ChatOpenAI({ model, apiKey: gw.apiKey, configuration: { baseURL: gw.baseURL }, temperature: 0, maxTokens: 200, maxRetries: 0, ...extra });
  beforeAll(async () => {
    gw = await startTestGateway({ agentFlags: { maxContextSize: 2048 } });
    await gw.addStack({ orgId: gw.orgId, machineId: gw.machineId, modelId: model, layers: { harness: "tools" } });
  });
  afterAll(async () => {
    await gw?.close();
  });

  it("withStructuredOutput returns an object that LangChain's own schema check accepts", async () => {
    const Pet = z.object({ name: z.string().max(12), kind: z.enum(["cat", "dog", "fish"]), friendly: z.boolean(), toys: z.array(z.string().max(8)).max(2) });
    const pet = await chat().withStructuredOutput(Pet, { name: "pet" }).invoke("Describe a pet.");
    expect(Pet.safeParse(pet).success).toBe(true);
    expect(["cat", "dog", "fish"]).toContain(pet.kind);
    // Its other way, a forced call of a function whose parameters are the schema, works too.
    const called = await chat().withStructuredOutput(Pet, { name: "pet", method: "functionCalling" }).invoke("Describe a pet.");
    expect(Pet.safeParse(called).success).toBe(true);
  });

  it("bindTools: the model's tool calls come back parsed, and the tool's result closes the round trip", async () => {
    const weather = tool(async ({ city }) => `It is sunny in ${city}.`, {
      name: "get_weather",
      description: "The weather in a city.",
      schema: z.object({ city: z.string().max(12), unit: z.enum(["celsius", "fahrenheit"]) }),
    });
    const withTools = chat().bindTools([weather], { tool_choice: "get_weather" });
    const question = new HumanMessage("What is the weather in Paris?");
    const reply = await withTools.invoke([question]);
    expect(reply.tool_calls).toHaveLength(1);
    const call = reply.tool_calls![0]!;
    expect(call.name).toBe("get_weather");
    expect(call.id).toMatch(/^call_/);
    expect(["celsius", "fahrenheit"]).toContain(call.args.unit);
    const result = (await weather.invoke(call)) as ToolMessage;
    expect(result).toBeInstanceOf(ToolMessage);
    const answer = await chat({ maxTokens: 12 }).bindTools([weather], { tool_choice: "none" }).invoke([question, reply as AIMessage, result]);
    expect(answer.tool_calls ?? []).toEqual([]);
    expect(typeof answer.content === "string" && answer.content.length > 0).toBe(true);
  });
});
