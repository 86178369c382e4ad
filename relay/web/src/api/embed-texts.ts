import { ApiError } from "./admin-client.js";

/** Calls the gateway's `/v1/embeddings` exactly as an API client does, with an API key: each text's vector, and the tokens they took. */
export async function embedTexts(options: { apiKey: string; model: string; texts: string[]; signal?: AbortSignal }): Promise<{ vectors: number[][]; promptTokens: number }> {
  const res = await fetch("/v1/embeddings", {
    method: "POST",
    headers: { authorization: `Bearer ${options.apiKey}`, "content-type": "application/json" },
    body: JSON.stringify({ model: options.model, input: options.texts, encoding_format: "float" }),
    signal: options.signal,
  });
  const body = (await res.json().catch(() => null)) as { data?: { index: number; embedding: number[] }[]; usage?: { prompt_tokens: number }; error?: { message?: string; code?: string; param?: string } } | null;
  if (!res.ok || !body?.data) throw new ApiError(res.status, body?.error?.code ?? null, body?.error?.param ?? null, body?.error?.message ?? `The gateway answered ${res.status}.`);
  const vectors: number[][] = [];
  for (const d of body.data) vectors[d.index] = d.embedding;
  return { vectors, promptTokens: body.usage?.prompt_tokens ?? 0 };
}

/** The cosine of the angle between two vectors: 1 the same direction, 0 unrelated, −1 opposite. */
export function cosineSimilarity(a: number[], b: number[]): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    dot += a[i]! * b[i]!;
    na += a[i]! * a[i]!;
    nb += b[i]! * b[i]!;
  }
  return na && nb ? dot / Math.sqrt(na * nb) : 0;
}
