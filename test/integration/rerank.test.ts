import { execFile, spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { getLlama, LlamaLogLevel } from "node-llama-cpp";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { hashPassword } from "../../relay/keys/index.js";
import { signedInPage } from "../helpers/chromium.js";
import { freePort } from "../helpers/free-port.js";
import { REPO_ROOT } from "../helpers/models.js";
import { OP } from "../helpers/operator.js";
import { startTestGateway, type TestGateway } from "../helpers/test-gateway.js";
import { writeTinyReranker } from "../helpers/tiny-reranker.js";

const STANDINS = join(import.meta.dirname, "..", "fixtures", "standins");

interface RerankAnswer {
  id: string;
  model: string;
  results: { index: number; relevance_score: number; document?: { text: string } }[];
  usage: { prompt_tokens: number; total_tokens: number };
}

/**
 * `POST /v1/rerank` (and Cohere's `/v2/rerank`) through the gateway: a real GGUF reranker (the tests' tiny one,
 * ../shared/models holding none) scored by node-llama-cpp's ranking context on the machine, and an OpenAI-compatible
 * server's `/rerank` passed through (a stand-in for vLLM, which cannot run here). The clients' requests are sent as
 * vLLM's, Jina's and Cohere's clients send them.
 */
describe("rerank through the gateway", () => {
  let gw: TestGateway;
  let standin: ChildProcess | undefined;
  let rerankerId = "";
  const dir = mkdtempSync(join(tmpdir(), "makina-rerank-"));
  const file = join(dir, "tiny-reranker.gguf");
  const query = "a cat on a mat";
  const documents = ["the cat sat on the mat", "a dog ran in the park", "birds fly over the sea", "the cat and the dog"];
  const rerank = (body: Record<string, unknown>, path = "/v1/rerank", key = gw.apiKey) =>
    fetch(`${gw.relay.url}${path}`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify(body) });

  beforeAll(async () => {
    writeTinyReranker(file);
    gw = await startTestGateway();
    // The Forge's panel reads the file's header on the machine, and says what it serves before the stack is made.
    const panel = await fetch(`${gw.relay.url}/admin/v1/compatibility`, {
      method: "POST",
      headers: { authorization: `Bearer ${gw.relay.adminToken}`, "content-type": "application/json" },
      body: JSON.stringify({ org: gw.orgId, machine: gw.machineId, runtime: "gguf", model: file }),
    }).then((r) => r.json() as Promise<{ serves: string[]; checks: { topic: string; message: string }[] }>);
    expect(panel.serves).toEqual(["rerank"]);
    expect(panel.checks.find((c) => c.topic === "endpoint")?.message).toBe("Reachable through the API as its model id, for rerank only (a reranker: chat and embeddings requests are refused).");
    const stack = await gw.relay.control.stacks.create(OP, { org: gw.orgId, name: "reranker", machine: gw.machineId, runtime: "gguf", model: file, modelId: "reranker" });
    await gw.relay.control.stacks.deploy(OP, stack.id);
    await gw.relay.deployer.settled(stack.id);
    rerankerId = stack.id;
  });
  afterAll(async () => {
    standin?.kill();
    await gw?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("scores each document with node-llama-cpp's ranking context, the most relevant first, the tokens read as the usage; the stack says it serves rerank", async () => {
    expect((await gw.relay.control.stacks.get(OP, rerankerId)).compatibility.serves).toEqual(["rerank"]);
    // vLLM's and Jina's clients: strings, the documents returned (the default).
    const res = await rerank({ model: "reranker", query, documents });
    const answer = (await res.json()) as RerankAnswer;
    expect(res.status).toBe(200);
    expect(answer.model).toBe("reranker");
    expect(answer.id).toMatch(/^rerank-/);
    // The same model in this process, as a program using node-llama-cpp itself would score them.
    const llama = await getLlama({ gpu: false, logLevel: LlamaLogLevel.error });
    const model = await llama.loadModel({ modelPath: file });
    const context = await model.createRankingContext({ threads: 1, contextSize: 512 });
    try {
      const own = await context.rankAll(query, documents);
      const order = own.map((score, index) => ({ score, index })).sort((a, b) => b.score - a.score);
      expect(answer.results.map((r) => r.index)).toEqual(order.map((o) => o.index));
      for (const r of answer.results) {
        expect(r.relevance_score).toBeCloseTo(own[r.index]!, 5);
        expect(r.document).toEqual({ text: documents[r.index] });
      }
      const tokens = documents.reduce((n, d) => n + context.calculateInputLength(query, d), 0);
      expect(answer.usage).toEqual({ prompt_tokens: tokens, total_tokens: tokens });
    } finally {
      await context.dispose();
      await model.dispose();
    }
    // Cohere's shape, under its v2 path: documents as {text}, top_n, and no documents back unless asked.
    const cohere = (await (await rerank({ model: "reranker", query, documents: documents.map((text) => ({ text })), top_n: 2 }, "/v2/rerank")).json()) as RerankAnswer;
    expect(cohere.results).toEqual(answer.results.slice(0, 2).map(({ index, relevance_score }) => ({ index, relevance_score })));
    // vLLM's top_n of 0: every document.
    expect(((await (await rerank({ model: "reranker", query, documents, top_n: 0 })).json()) as RerankAnswer).results).toHaveLength(documents.length);
  });

  it("logs each rerank under its API and counts it against the key's token limit by what the documents hold", async () => {
    await vi.waitFor(
      async () => {
        const log = (await fetch(`${gw.relay.url}/admin/v1/requests?org=${gw.orgId}&api=rerank`, { headers: { authorization: `Bearer ${gw.relay.adminToken}` } }).then((r) => r.json())) as { data: { api: string; model: string; status: number; prompt_tokens: number }[] };
        expect(log.data.length).toBeGreaterThanOrEqual(2);
        expect(log.data.every((r) => r.api === "rerank" && r.model === "reranker" && r.status === 200 && r.prompt_tokens > 0)).toBe(true);
      },
      { timeout: 10_000, interval: 100 },
    );
    const { key } = await gw.relay.control.keys.create(OP, gw.orgId, { tpm: 40 });
    expect((await rerank({ model: "reranker", query: "cat", documents: ["a cat"] }, "/v1/rerank", key)).status).toBe(200);
    const long = await rerank({ model: "reranker", query, documents: Array.from({ length: 20 }, (_, i) => `document ${i} about a cat on a mat`) }, "/v1/rerank", key);
    expect([long.status, ((await long.json()) as { error: { code: string; type: string } }).error]).toMatchObject([429, { code: "rate_limit_exceeded", type: "tokens" }]);
  });

  it("refuses what a reranker does not answer, and rerank from a model that does not rank, saying why", async () => {
    const client = new OpenAI({ baseURL: gw.baseURL, apiKey: gw.apiKey, maxRetries: 0 });
    const chat = await client.chat.completions.create({ model: "reranker", messages: [{ role: "user", content: "Hi" }] }).catch((e: unknown) => e as InstanceType<typeof OpenAI.APIError>);
    expect(chat).toMatchObject({ status: 400, code: "unsupported_parameter", param: "model", error: { message: expect.stringContaining("is a reranker") } });
    const embed = await client.embeddings.create({ model: "reranker", input: "a cat" }).catch((e: unknown) => e as InstanceType<typeof OpenAI.APIError>);
    expect(embed).toMatchObject({ status: 400, code: "unsupported_parameter", error: { message: expect.stringContaining("not embeddings") } });
    // The test's chat model has no classification head.
    const notRanking = await rerank({ model: "stories", query, documents });
    expect([notRanking.status, ((await notRanking.json()) as { error: { code: string; message: string } }).error]).toMatchObject([400, { code: "unsupported_parameter", message: expect.stringContaining("does not rank documents") }]);
    // Behind an orchestrator, refused by the relay before any machine is asked.
    await gw.addStack({ orgId: gw.orgId, machineId: gw.machineId, modelId: "voted-ranks", layers: { orchestrator: "vote", orchestratorOptions: { samples: 3 } } });
    const voted = await rerank({ model: "voted-ranks", query, documents });
    expect([voted.status, ((await voted.json()) as { error: { message: string } }).error.message]).toEqual([400, expect.stringContaining("'vote' orchestrator")]);
  });

  it("refuses bad bodies in the documented shape, naming the parameter", async () => {
    const refusal = async (body: Record<string, unknown>) => {
      const res = await rerank({ model: "reranker", ...body });
      return { status: res.status, ...((await res.json()) as { error: { code: string; param: string | null } }).error };
    };
    expect(await refusal({ documents })).toMatchObject({ status: 400, code: "missing_required_parameter", param: "query" });
    expect(await refusal({ query: " ", documents })).toMatchObject({ status: 400, code: "invalid_value", param: "query" });
    expect(await refusal({ query })).toMatchObject({ status: 400, code: "missing_required_parameter", param: "documents" });
    expect(await refusal({ query, documents: [] })).toMatchObject({ status: 400, code: "invalid_value", param: "documents" });
    expect(await refusal({ query, documents: Array.from({ length: 1001 }, () => "a") })).toMatchObject({ status: 400, code: "invalid_value", param: "documents" });
    expect(await refusal({ query, documents: ["a", 3] })).toMatchObject({ status: 400, code: "invalid_value", param: "documents[1]" });
    expect(await refusal({ query, documents: [{ text: "a", title: "t" }] })).toMatchObject({ status: 400, code: "unknown_parameter", param: "documents[0].title" });
    expect(await refusal({ query, documents, top_n: -1 })).toMatchObject({ status: 400, code: "invalid_value", param: "top_n" });
    // A query is read with every document: past 32 KiB it is refused by the relay, and one that alone fills the
    // model's context by the machine, before any document is read.
    expect(await refusal({ query: "q".repeat(33_000), documents })).toMatchObject({ status: 400, code: "invalid_value", param: "query" });
    expect(await refusal({ query: "word ".repeat(2000), documents })).toMatchObject({ status: 400, code: "context_length_exceeded", param: "query" });
    expect(await refusal({ query, documents, return_documents: "yes" })).toMatchObject({ status: 400, code: "invalid_value", param: "return_documents" });
    expect(await refusal({ query, documents, max_chunks_per_doc: 10 })).toMatchObject({ status: 400, code: "unsupported_parameter", param: "max_chunks_per_doc" });
    expect(await refusal({ query, documents, temperature: 1 })).toMatchObject({ status: 400, code: "unknown_parameter", param: "temperature" });
    expect(await refusal({ query, documents: ["word ".repeat(9000)] })).toMatchObject({ status: 400, code: "context_length_exceeded", param: "documents[0]" });
    // A client's null for an option it did not set is no option.
    expect((await rerank({ model: "reranker", query, documents, top_n: null, max_chunks_per_doc: null })).status).toBe(200);
  });

  it("shows a reranker's page in Chromium as it is: rerank snippets only, one that runs as pasted, and a playground that ranks documents", async () => {
    await gw.relay.store.users.create({ orgId: gw.orgId, login: "ranker-admin", passwordHash: await hashPassword("ranker-password-1"), role: "admin" });
    const { browser, page } = await signedInPage(gw.relay.url, "ranker-admin", "ranker-password-1");
    try {
      await page.goto(`${gw.relay.url}/stacks/${rerankerId}`);
      await page.getByRole("heading", { name: "Playground" }).waitFor();
      // Its snippets: rerank only, and the page says why.
      expect(await page.getByRole("tablist", { name: "API" }).getByRole("tab").allTextContents()).toEqual(["Rerank"]);
      expect(await page.getByTestId("snippet-curl").textContent()).toContain(`${gw.relay.url}/v1/rerank`);
      expect(await page.getByText("Its model is a reranker").count()).toBe(1);
      await page.getByRole("tab", { name: "JavaScript" }).click();
      const snippet = (await page.getByTestId("snippet-javascript").textContent()) ?? "";
      // The JavaScript snippet runs as pasted, with the key in the environment, and prints the best document's result.
      const printed = await new Promise<string>((resolve, reject) =>
        execFile(process.execPath, ["--input-type=module", "-e", snippet], { env: { ...process.env, MAKINA_API_KEY: gw.apiKey } }, (err, stdout, stderr) => (err ? reject(new Error(stderr)) : resolve(stdout))),
      );
      expect(printed).toMatch(/index: [01],\s+relevance_score: 0\.\d+/);
      // The playground ranks its documents through the gateway, the most relevant first.
      await page.getByRole("button", { name: "Create a playground key" }).click();
      await page.getByLabel("Query").fill(query);
      await page.getByLabel("Documents, one a line").fill(documents.slice(0, 3).join("\n"));
      await page.getByRole("button", { name: "Rank" }).click();
      const ranked = page.getByTestId("ranked").locator("li");
      await expect.poll(() => ranked.count()).toBe(3);
      const shown = (await ranked.allTextContents()).map((t) => Number(t.split(" ")[0]));
      expect(shown).toEqual([...shown].sort((x, y) => y - x));
      const own = (await (await rerank({ model: "reranker", query, documents: documents.slice(0, 3) })).json()) as RerankAnswer;
      expect(shown).toEqual(own.results.map((r) => Number(r.relevance_score.toFixed(3))));
      await page.screenshot({ path: join(REPO_ROOT, "test-output", "screenshots", "stack-reranker.png"), fullPage: true });
      // As a phone in the dark shows it: the ranked documents and the snippets within the screen's width.
      await page.emulateMedia({ colorScheme: "dark" });
      await page.setViewportSize({ width: 390, height: 900 });
      await page.getByTestId("ranked").scrollIntoViewIfNeeded();
      expect(await page.evaluate<number>("document.documentElement.scrollWidth")).toBeLessThanOrEqual(390);
      await page.screenshot({ path: join(REPO_ROOT, "test-output", "screenshots", "stack-reranker-narrow-dark.png") });
    } finally {
      await browser.close();
    }
  });

  it("passes rerank to an OpenAI-compatible server's /rerank (a stand-in for vLLM), sorting and cutting to top_n itself", async () => {
    const port = await freePort();
    const log = join(dir, "standin.log");
    standin = spawn(process.execPath, [join(STANDINS, "openai-server.mjs"), "--host", "127.0.0.1", "--port", String(port), "--model", "ranker"], { stdio: "ignore", env: { ...process.env, STANDIN_LOG: log } });
    await vi.waitFor(async () => expect((await fetch(`http://127.0.0.1:${port}/health`)).status).toBe(200), { timeout: 5000, interval: 50 });
    const stack = await gw.relay.control.stacks.create(OP, { org: gw.orgId, name: "ranker", machine: gw.machineId, runtime: "openai", model: `http://127.0.0.1:${port}/v1#ranker`, modelId: "ranker" });
    await gw.relay.control.stacks.deploy(OP, stack.id);
    await gw.relay.deployer.settled(stack.id);
    const answer = (await (await rerank({ model: "ranker", query: "cat on mat", documents, top_n: 3, return_documents: false })).json()) as RerankAnswer;
    // The stand-in's scores: the share of the query's words each document has.
    expect(answer.results).toEqual([
      { index: 0, relevance_score: 1 },
      { index: 3, relevance_score: 1 / 3 },
      { index: 1, relevance_score: 0 },
    ]);
    // Its usage said only a total: that is the prompt's.
    expect(answer.usage).toEqual({ prompt_tokens: 4 * 3 + 6 + 6 + 5 + 5, total_tokens: 4 * 3 + 6 + 6 + 5 + 5 });
    // Every document went to the server, and no top_n: the relay cut the answer.
    expect(readFileSync(log, "utf8")).toContain("rerank ranker documents=4 top_n=-");
  });
});
