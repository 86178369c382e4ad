import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generator, type HostileRequest } from "../helpers/hostile-requests.js";
import { startTestGateway, type TestGateway } from "../helpers/test-gateway.js";

interface Answer {
  status: number;
  requestId: string | null;
  body: string;
}

function sendRaw(port: number, bytes: Buffer): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1");
    let data = "";
    socket.on("data", (d) => (data += d.toString("latin1")));
    socket.on("error", reject);
    socket.on("close", () => {
      const [head = "", body = ""] = data.split("\r\n\r\n", 2);
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0);
      resolve({ status, requestId: /x-request-id: (\S+)/i.exec(head)?.[1] ?? null, body });
    });
    socket.end(bytes);
  });
}

async function send(base: string, port: number, r: HostileRequest): Promise<Answer> {
  if (r.raw) return sendRaw(port, r.raw);
  const res = await fetch(base + r.path, { method: r.method, headers: r.headers, body: r.method === "GET" || r.method === "HEAD" ? undefined : r.body });
  return { status: res.status, requestId: res.headers.get("x-request-id"), body: await res.text() };
}

describe("hostile input", () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway();
  });
  afterAll(async () => {
    await gw?.close();
  });

  it("answers 5,000 generated malformed or hostile requests with a 4xx in the error envelope, and keeps serving", async () => {
    const seed = Number(process.env.MAKINA_FUZZ_SEED ?? 20261122);
    const gen = generator(seed, { key: gw.apiKey, model: gw.modelId });
    const cases: HostileRequest[] = [gen.huge(5), gen.huge(5), ...Array.from({ length: 4998 }, () => gen.next())];
    const failures: string[] = [];
    const kinds = new Map<string, number>();
    let next = 0;
    const worker = async () => {
      while (next < cases.length) {
        const i = next++;
        const r = cases[i]!;
        kinds.set(r.kind, (kinds.get(r.kind) ?? 0) + 1);
        const a = await send(gw.relay.url, gw.relay.httpPort, r);
        let envelope = false;
        try {
          const parsed = JSON.parse(a.body) as { type?: unknown; error?: Record<string, unknown> };
          const e = parsed.error;
          // The Messages API answers in Anthropic's envelope; every other path in the OpenAI one.
          envelope =
            r.path === "/v1/messages"
              ? parsed.type === "error" && !!e && typeof e.type === "string" && typeof e.message === "string" && Object.keys(e).length === 2
              : !!e && typeof e.message === "string" && typeof e.type === "string" && (e.param === null || typeof e.param === "string") && (e.code === null || typeof e.code === "string") && Object.keys(e).length === 4;
        } catch {
          envelope = false;
        }
        if (a.status < 400 || a.status > 499 || !envelope || !a.requestId) {
          failures.push(`#${i} (seed ${seed}) ${r.kind} ${r.method} ${r.path.slice(0, 60)} -> ${a.status} ${a.body.slice(0, 200)}`);
        }
      }
    };
    await Promise.all(Array.from({ length: 16 }, worker));
    expect(failures.slice(0, 20)).toEqual([]);
    expect(cases).toHaveLength(5000);
    expect(kinds.size).toBeGreaterThanOrEqual(20);
    expect(cases.filter((r) => r.path === "/v1/messages").length).toBeGreaterThan(700);
    expect(cases.filter((r) => r.path === "/v1/responses").length).toBeGreaterThan(700);
    expect(cases.filter((r) => r.path === "/v1/embeddings").length).toBeGreaterThan(300);
    expect(cases.filter((r) => r.path === "/v1/rerank").length).toBeGreaterThan(200);

    const health = await fetch(`${gw.relay.url}/health`);
    expect(health.status).toBe(200);
    const ok = await fetch(`${gw.baseURL}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${gw.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ model: gw.modelId, messages: [{ role: "user", content: "Still there?" }], max_tokens: 2 }),
    });
    expect(ok.status).toBe(200);
  }, 180_000);
});
