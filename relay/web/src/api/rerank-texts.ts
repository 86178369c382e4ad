import { ApiError } from "./admin-client.js";

/** Calls the gateway's `/v1/rerank` exactly as an API client does, with an API key: each document's score, the most relevant first, and the tokens read. */
export async function rerankTexts(options: { apiKey: string; model: string; query: string; documents: string[]; signal?: AbortSignal }): Promise<{ results: { index: number; score: number }[]; promptTokens: number }> {
  const res = await fetch("/v1/rerank", {
    method: "POST",
    headers: { authorization: `Bearer ${options.apiKey}`, "content-type": "application/json" },
    body: JSON.stringify({ model: options.model, query: options.query, documents: options.documents, return_documents: false }),
    signal: options.signal,
  });
  const body = (await res.json().catch(() => null)) as { results?: { index: number; relevance_score: number }[]; usage?: { prompt_tokens: number }; error?: { message?: string; code?: string; param?: string } } | null;
  if (!res.ok || !body?.results) throw new ApiError(res.status, body?.error?.code ?? null, body?.error?.param ?? null, body?.error?.message ?? `The gateway answered ${res.status}.`);
  return { results: body.results.map((r) => ({ index: r.index, score: r.relevance_score })), promptTokens: body.usage?.prompt_tokens ?? 0 };
}
