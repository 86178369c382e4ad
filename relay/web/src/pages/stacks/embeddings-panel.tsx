import { useState } from "preact/hooks";
import { ApiError } from "../../api/admin-client.js";
import { cosineSimilarity, embedTexts } from "../../api/embed-texts.js";
import { Notice } from "../../components/notice.js";

/**
 * Two texts, their embeddings from the stack through the real gateway path (`/v1/embeddings`, with the
 * playground's key), and how alike they are: the cosine similarity of their vectors.
 */
export function EmbeddingsPanel({ apiKey, model, onUnauthorized }: { apiKey: string; model: string; onUnauthorized: () => void }) {
  const [first, setFirst] = useState("The cat sat on the mat.");
  const [second, setSecond] = useState("A cat was sitting on a mat.");
  const [result, setResult] = useState<{ similarity: number; dimensions: number; tokens: number; ms: number } | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const compare = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    const started = performance.now();
    try {
      const { vectors, promptTokens } = await embedTexts({ apiKey, model, texts: [first, second] });
      setResult({ similarity: cosineSimilarity(vectors[0]!, vectors[1]!), dimensions: vectors[0]!.length, tokens: promptTokens, ms: performance.now() - started });
    } catch (err) {
      setResult(null);
      setError(err instanceof ApiError ? err.message : String(err));
      if (err instanceof ApiError && err.status === 401) onUnauthorized();
    } finally {
      setBusy(false);
    }
  };

  return (
    <form class="embeddings-form" onSubmit={compare}>
      <div class="grid two">
        <div class="field">
          <label for="embed-first">First text</label>
          <textarea id="embed-first" rows={3} value={first} onInput={(e) => setFirst(e.currentTarget.value)} />
        </div>
        <div class="field">
          <label for="embed-second">Second text</label>
          <textarea id="embed-second" rows={3} value={second} onInput={(e) => setSecond(e.currentTarget.value)} />
        </div>
      </div>
      <div class="form-actions">
        <button type="submit" class="button primary" disabled={busy || !first.trim() || !second.trim()}>
          {busy ? "Comparing…" : "Compare"}
        </button>
        {result && (
          <p class="similarity" data-testid="similarity" aria-live="polite">
            Cosine similarity <strong>{result.similarity.toFixed(3)}</strong>
            <span class="muted">
              {" "}
              · {result.dimensions} dimensions · {result.tokens} tokens · {Math.round(result.ms)} ms
            </span>
          </p>
        )}
      </div>
      {error && <Notice tone="error">{error}</Notice>}
      <p class="hint">1 means the same meaning to this model, 0 unrelated. Each text is one input of one request to /v1/embeddings.</p>
    </form>
  );
}
