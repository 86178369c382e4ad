import { useState } from "preact/hooks";
import { ApiError } from "../../api/admin-client.js";
import { rerankTexts } from "../../api/rerank-texts.js";
import { Notice } from "../../components/notice.js";

/**
 * A query and a few documents (one a line), ranked by the stack's reranker through the real gateway path
 * (`/v1/rerank`, with the playground's key): each document with its score, the most relevant first.
 */
export function RerankPanel({ apiKey, model, onUnauthorized }: { apiKey: string; model: string; onUnauthorized: () => void }) {
  const [query, setQuery] = useState("Where did the cat sit?");
  const [text, setText] = useState("The cat sat on the mat.\nA dog ran in the park.\nBirds fly over the sea.");
  const [ranked, setRanked] = useState<{ rows: { document: string; score: number }[]; tokens: number; ms: number } | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const documents = text.split("\n").map((d) => d.trim()).filter(Boolean);

  const rank = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    const started = performance.now();
    try {
      const { results, promptTokens } = await rerankTexts({ apiKey, model, query, documents });
      setRanked({ rows: results.map((r) => ({ document: documents[r.index] ?? "", score: r.score })), tokens: promptTokens, ms: performance.now() - started });
    } catch (err) {
      setRanked(null);
      setError(err instanceof ApiError ? err.message : String(err));
      if (err instanceof ApiError && err.status === 401) onUnauthorized();
    } finally {
      setBusy(false);
    }
  };

  return (
    <form class="embeddings-form" onSubmit={rank}>
      <div class="field">
        <label for="rerank-query">Query</label>
        <input id="rerank-query" value={query} onInput={(e) => setQuery(e.currentTarget.value)} />
      </div>
      <div class="field">
        <label for="rerank-documents">Documents, one a line</label>
        <textarea id="rerank-documents" rows={4} value={text} onInput={(e) => setText(e.currentTarget.value)} />
      </div>
      <div class="form-actions">
        <button type="submit" class="button primary" disabled={busy || !query.trim() || documents.length === 0}>
          {busy ? "Ranking…" : "Rank"}
        </button>
        {ranked && (
          <span class="muted" aria-live="polite">
            {ranked.rows.length} documents · {ranked.tokens} tokens · {Math.round(ranked.ms)} ms
          </span>
        )}
      </div>
      {ranked && (
        <ol class="ranked" data-testid="ranked">
          {ranked.rows.map((r, i) => (
            <li key={i}>
              <strong>{r.score.toFixed(3)}</strong> {r.document}
            </li>
          ))}
        </ol>
      )}
      {error && <Notice tone="error">{error}</Notice>}
      <p class="hint">Each document is scored against the query by the model: higher is more relevant. One request to /v1/rerank.</p>
    </form>
  );
}
