import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { OpenAIEmbeddings } from "@langchain/openai";
import { getLlama, LlamaLogLevel } from "node-llama-cpp";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { freePort } from "../helpers/free-port.js";
import { writeGgufWithUint32 } from "../helpers/gguf-metadata.js";
import { testModelPath } from "../helpers/models.js";
import { startTestGateway, type TestGateway } from "../helpers/test-gateway.js";
import { OP } from "../helpers/operator.js";

const STANDINS = join(import.meta.dirname, "..", "fixtures", "standins");

const cosine = (a: number[], b: number[]) => {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * b[i]!;
    na += a[i]! ** 2;
    nb += b[i]! ** 2;
  }
  return dot / Math.sqrt(na * nb);
};

describe("embeddings through the gateway", () => {
  let gw: TestGateway;
  let client: OpenAI;
  let standin: ChildProcess | undefined;
  const texts = ["The cat sat on the mat.", "A cat was sitting on a mat.", "Once upon a time there was a dog."];

  beforeAll(async () => {
    gw = await startTestGateway();
    client = new OpenAI({ baseURL: gw.baseURL, apiKey: gw.apiKey, maxRetries: 0 });
  });
  afterAll(async () => {
    standin?.kill();
    await gw?.close();
  });

  it("answers the official client (which asks for base64 and decodes it) with node-llama-cpp's vectors for the GGUF model, in order, of unit length", async () => {
    const res = await client.embeddings.create({ model: "stories", input: texts });
    expect(res).toMatchObject({ object: "list", model: "stories" });
    expect(res.data.map((d) => [d.object, d.index])).toEqual([
      ["embedding", 0],
      ["embedding", 1],
      ["embedding", 2],
    ]);
    // The same model in this process, as a program using node-llama-cpp itself would get them.
    const llama = await getLlama({ gpu: false, logLevel: LlamaLogLevel.error });
    const model = await llama.loadModel({ modelPath: testModelPath() });
    const context = await model.createEmbeddingContext({ threads: 1, contextSize: 512 });
    try {
      for (const [i, text] of texts.entries()) {
        const own = (await context.getEmbeddingFor(text)).vector;
        const got = res.data[i]!.embedding;
        expect(got).toHaveLength(model.embeddingVectorSize);
        expect(cosine(got, [...own])).toBeCloseTo(1, 5);
        expect(Math.hypot(...got)).toBeCloseTo(1, 5);
      }
      // Tokens of every input, as the model counts them, are the usage: prompt and total alike.
      const tokens = texts.reduce((n, t) => n + context.calculateInputLength(t), 0);
      expect(res.usage).toEqual({ prompt_tokens: tokens, total_tokens: tokens });
    } finally {
      await context.dispose();
      await model.dispose();
    }
    // Float and base64 are the same vectors.
    const floats = (await fetch(`${gw.baseURL}/embeddings`, { method: "POST", headers: { authorization: `Bearer ${gw.apiKey}`, "content-type": "application/json" }, body: JSON.stringify({ model: "stories", input: texts[0], encoding_format: "float" }) }).then((r) => r.json())) as { data: { embedding: number[] }[] };
    const b64 = (await fetch(`${gw.baseURL}/embeddings`, { method: "POST", headers: { authorization: `Bearer ${gw.apiKey}`, "content-type": "application/json" }, body: JSON.stringify({ model: "stories", input: texts[0], encoding_format: "base64" }) }).then((r) => r.json())) as { data: { embedding: string }[] };
    const bytes = Buffer.from(b64.data[0]!.embedding, "base64");
    const decoded = Array.from(new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4));
    expect(decoded).toEqual(floats.data[0]!.embedding.map((v) => Math.fround(v)));
    expect(cosine(floats.data[0]!.embedding, res.data[0]!.embedding)).toBeCloseTo(1, 5);
  });

  it("takes token arrays, and the same tokens give the same vector as their text", async () => {
    const res = await client.embeddings.create({ model: "stories", input: "Once upon a time", encoding_format: "float" });
    const llama = await getLlama({ gpu: false, logLevel: LlamaLogLevel.error });
    const model = await llama.loadModel({ modelPath: testModelPath() });
    const tokens = [...model.tokenize("Once upon a time")];
    await model.dispose();
    const byTokens = await client.embeddings.create({ model: "stories", input: [tokens, tokens], encoding_format: "float" });
    expect(byTokens.data).toHaveLength(2);
    expect(cosine(byTokens.data[0]!.embedding, res.data[0]!.embedding)).toBeCloseTo(1, 5);
  });

  it("serves LangChain's OpenAIEmbeddings, documents and queries", async () => {
    const embeddings = new OpenAIEmbeddings({ model: "stories", apiKey: gw.apiKey, configuration: { baseURL: gw.baseURL }, maxRetries: 0 });
    const docs = await embeddings.embedDocuments(texts);
    const query = await embeddings.embedQuery("cat on a mat");
    expect(docs).toHaveLength(3);
    expect(query).toHaveLength(docs[0]!.length);
    // The two sentences about a cat on a mat are closer to each other than to the one about a dog.
    expect(cosine(docs[0]!, docs[1]!)).toBeGreaterThan(cosine(docs[0]!, docs[2]!));
  });

  it("stops computing a request's vectors when its client goes away, and serves the next one", async () => {
    const canceledBefore = gw.agent.inference.canceled;
    const many = Array.from({ length: 2048 }, (_, i) => `Story number ${i} about a little cat and a big dog in the park.`);
    const gone = new AbortController();
    const leaving = client.embeddings.create({ model: "stories", input: many }, { signal: gone.signal }).catch((e: unknown) => e);
    // Leaves once the machine has started on it (its model process computes one input at a time).
    await vi.waitFor(() => expect(gw.agent.inference.inFlight).toBeGreaterThan(0), { timeout: 10_000, interval: 5 });
    gone.abort();
    expect(await leaving).toBeInstanceOf(OpenAI.APIUserAbortError);
    await vi.waitFor(() => expect(gw.agent.inference.canceled).toBe(canceledBefore + 1), { timeout: 10_000, interval: 20 });
    expect((await client.embeddings.create({ model: "stories", input: "Still there?" })).data).toHaveLength(1);
  });

  it("holds a key to its token limit by the inputs' tokens", async () => {
    const { key } = await gw.relay.control.keys.create(OP, gw.orgId, { tpm: 20 });
    const limited = new OpenAI({ baseURL: gw.baseURL, apiKey: key, maxRetries: 0 });
    expect((await limited.embeddings.create({ model: "stories", input: "A cat." })).usage.prompt_tokens).toBeLessThan(20);
    const long = await limited.embeddings.create({ model: "stories", input: "A cat sat on the mat and looked at the dog for a long while. ".repeat(4) }).catch((e: unknown) => e as InstanceType<typeof OpenAI.APIError>);
    expect(long).toMatchObject({ status: 429, code: "rate_limit_exceeded", type: "tokens" });
  });

  it("refuses bad inputs, naming them: empty, too many, a token past the vocabulary, one longer than the context, another size", async () => {
    const refusal = (body: Record<string, unknown>) => client.embeddings.create({ model: "stories", ...body } as never).catch((e: unknown) => e as InstanceType<typeof OpenAI.APIError>);
    expect(await refusal({ input: "" })).toMatchObject({ status: 400, code: "invalid_value", param: "input" });
    expect(await refusal({ input: ["a", ""] })).toMatchObject({ status: 400, code: "invalid_value", param: "input[1]" });
    expect(await refusal({ input: [] })).toMatchObject({ status: 400, param: "input" });
    expect(await refusal({ input: Array.from({ length: 2049 }, () => "a") })).toMatchObject({ status: 400, code: "invalid_value", param: "input", error: { message: expect.stringContaining("at most 2048") } });
    expect(await refusal({ input: [[1, 2, 99999]] })).toMatchObject({ status: 400, code: "invalid_value", param: "input[0]", error: { message: expect.stringContaining("vocabulary of 512") } });
    expect(await refusal({ input: ["short", "word ".repeat(5000)] })).toMatchObject({ status: 400, code: "context_length_exceeded", param: "input[1]" });
    expect(await refusal({ input: "a", dimensions: 32 })).toMatchObject({ status: 400, code: "unsupported_parameter", param: "dimensions", error: { message: expect.stringContaining("64 dimensions") } });
    expect((await client.embeddings.create({ model: "stories", input: "a", dimensions: 64 })).data[0]!.embedding).toHaveLength(64);
    expect(await refusal({ input: "a", encoding_format: "int8" })).toMatchObject({ status: 400, code: "invalid_value", param: "encoding_format" });
    expect(await refusal({ input: "a", temperature: 1 })).toMatchObject({ status: 400, code: "unknown_parameter", param: "temperature" });
    expect(await refusal({ model: "no-such-model", input: "a" })).toMatchObject({ status: 404, code: "model_not_found" });
  });

  it("refuses embeddings and token counts from a stack whose orchestrator answers chats only", async () => {
    await gw.addStack({ orgId: gw.orgId, machineId: gw.machineId, modelId: "voted", layers: { orchestrator: "vote", orchestratorOptions: { samples: 3 } } });
    const err = await client.embeddings.create({ model: "voted", input: "a" }).catch((e: unknown) => e as InstanceType<typeof OpenAI.APIError>);
    expect(err).toMatchObject({ status: 400, code: "unsupported_parameter", param: "model", error: { message: expect.stringContaining("'vote' orchestrator") } });
    // Nor can its prompts be counted as one (Anthropic's count_tokens), said in Anthropic's envelope.
    const count = await fetch(`${gw.baseURL}/messages/count_tokens`, { method: "POST", headers: { "x-api-key": gw.apiKey, "content-type": "application/json" }, body: JSON.stringify({ model: "voted", messages: [{ role: "user", content: "Hi" }] }) });
    expect([count.status, await count.json()]).toEqual([400, { type: "error", error: { type: "invalid_request_error", message: expect.stringContaining("its tokens cannot be counted") } }]);
  });

  it("serves an embedding model's embeddings and refuses it chats, in each API's shape, and says so of the stack", async () => {
    // The test model with the pooling type a converter writes for embedding models: its header says what it is for.
    const file = join(mkdtempSync(join(tmpdir(), "makina-embedder-")), "stories-pooled.gguf");
    writeGgufWithUint32(testModelPath(), file, "llama.pooling_type", 1);
    // The Forge's panel reads the file's header on the machine, and says so before the stack is made.
    const panel = await fetch(`${gw.relay.url}/admin/v1/compatibility`, {
      method: "POST",
      headers: { authorization: `Bearer ${gw.relay.adminToken}`, "content-type": "application/json" },
      body: JSON.stringify({ org: gw.orgId, machine: gw.machineId, runtime: "gguf", model: file }),
    }).then((r) => r.json() as Promise<{ serves: string[]; checks: { topic: string; message: string }[] }>);
    expect(panel.serves).toEqual(["embeddings"]);
    expect(panel.checks.find((c) => c.topic === "endpoint")?.message).toBe("Reachable through the API as its model id, for embeddings only (an embedding model: chat requests are refused).");
    const stack = await gw.relay.control.stacks.create(OP, { org: gw.orgId, name: "pooled", machine: gw.machineId, runtime: "gguf", model: file, modelId: "pooled" });
    await gw.relay.control.stacks.deploy(OP, stack.id);
    await gw.relay.deployer.settled(stack.id);
    // Once served, the stack says it too (its runtime read the header).
    expect((await gw.relay.control.stacks.get(OP, stack.id)).compatibility.serves).toEqual(["embeddings"]);
    expect((await client.embeddings.create({ model: "pooled", input: ["a cat", "a dog"] })).data.map((d) => d.embedding.length)).toEqual([64, 64]);
    const chat = await client.chat.completions.create({ model: "pooled", messages: [{ role: "user", content: "Hi" }] }).catch((e: unknown) => e as InstanceType<typeof OpenAI.APIError>);
    expect(chat).toMatchObject({ status: 400, code: "unsupported_parameter", param: "model", error: { message: expect.stringContaining("is an embedding model") } });
    const message = await fetch(`${gw.baseURL}/messages`, { method: "POST", headers: { "x-api-key": gw.apiKey, "content-type": "application/json" }, body: JSON.stringify({ model: "pooled", max_tokens: 5, messages: [{ role: "user", content: "Hi" }] }) });
    expect([message.status, ((await message.json()) as { error: { type: string } }).error.type]).toEqual([400, "invalid_request_error"]);
  });

  it("passes embeddings to an OpenAI-compatible server (a stand-in for vLLM's pooling models), dimensions and all", async () => {
    const port = await freePort();
    standin = spawn(process.execPath, [join(STANDINS, "openai-server.mjs"), "--host", "127.0.0.1", "--port", String(port), "--model", "embedder"], { stdio: "ignore" });
    await vi.waitFor(async () => expect((await fetch(`http://127.0.0.1:${port}/health`)).status).toBe(200), { timeout: 5000, interval: 50 });
    const stack = await gw.relay.control.stacks.create(OP, { org: gw.orgId, name: "embedder", machine: gw.machineId, runtime: "openai", model: `http://127.0.0.1:${port}/v1#embedder`, modelId: "embedder" });
    await gw.relay.control.stacks.deploy(OP, stack.id);
    await gw.relay.deployer.settled(stack.id);
    const res = await client.embeddings.create({ model: "embedder", input: ["ab", "ba c"], dimensions: 2, encoding_format: "float" });
    expect(res.data.map((d) => d.embedding)).toEqual([
      [97, 98],
      [98 + 32, 97 + 99],
    ]);
    expect(res.usage).toEqual({ prompt_tokens: 3, total_tokens: 3 });
    // The relay holds at most 2 Mi numbers of one request's vectors: past that, a clear 413 saying what to do.
    const tooMany = await client.embeddings.create({ model: "embedder", input: Array.from({ length: 40 }, (_, i) => `text ${i}`), dimensions: 65_536, encoding_format: "float" }).catch((e: unknown) => e as InstanceType<typeof OpenAI.APIError>);
    expect(tooMany).toMatchObject({ status: 413, code: "request_too_large", param: "input", error: { message: expect.stringContaining("send fewer inputs") } });
    // The machine was told to stop, and serves the next request.
    expect((await client.embeddings.create({ model: "embedder", input: "ab", dimensions: 2, encoding_format: "float" })).data[0]!.embedding).toEqual([97, 98]);
  });
});
