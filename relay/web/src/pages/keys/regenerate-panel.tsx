import { useState } from "preact/hooks";
import type { ApiError } from "../../api/admin-client.js";
import type { ApiKey, NewApiKey } from "../../api/types.js";
import { useApp } from "../../app-context.js";
import { Field } from "../../components/field.js";
import { NewSecret } from "./new-secret.js";
import { Notice } from "../../components/notice.js";
import { useEscape } from "../../components/use-escape.js";

/** How long the old secret may keep working, in words (the relay allows up to a day). */
const GRACES = [
  [0, "Not at all: it stops now"],
  [15 * 60, "15 minutes"],
  [3600, "1 hour"],
  [8 * 3600, "8 hours"],
  [86_400, "24 hours"],
] as const;

/**
 * Gives a key a new secret, shown once, while its old one keeps working for the time chosen (so the apps using
 * it can be moved over), then stops; its restrictions, limits and use stay.
 */
export function RegeneratePanel({ apiKey, onClose }: { apiKey: ApiKey; onClose: () => void }) {
  const { client } = useApp();
  const [grace, setGrace] = useState<number>(3600);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [made, setMade] = useState<NewApiKey | null>(null);
  useEscape(onClose, !busy && !made);
  const name = apiKey.name ?? `${apiKey.prefix}…`;
  const regenerate = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      setMade(await client.call("POST /admin/v1/keys/:id/regenerate", { params: { id: apiKey.id }, body: { grace_s: grace } }));
    } catch (err) {
      setError((err as ApiError).message);
    } finally {
      setBusy(false);
    }
  };
  if (made) {
    const until = made.old_secret_until ?? 0;
    return (
      <NewSecret id="regenerated-title" title={`The new secret of ${name}`} secret={made.key} testId="regenerated-key" onDone={onClose}>
        <p class="small" data-testid="old-secret-until">
          {until > (made.regenerated_at ?? 0)
            ? `The old secret keeps working until ${new Date(until).toLocaleString()}, then stops: move its apps to the new one before then.`
            : "The old secret has stopped working."}
        </p>
      </NewSecret>
    );
  }
  return (
    <section class="card panel" aria-labelledby="regenerate-title" data-testid="regenerate-key">
      <h2 id="regenerate-title">Regenerate the secret of {name}</h2>
      <p class="muted small">The key gets a new secret; its name, restrictions, limits and use stay. The new secret is shown once.</p>
      <form onSubmit={regenerate}>
        {error && <Notice tone="error">{error}</Notice>}
        {(apiKey.old_secret_until ?? 0) > Date.now() && (
          <Notice tone="warn">Its previous secret still works until {new Date(apiKey.old_secret_until!).toLocaleString()}: regenerating now stops that one at once (only the last old secret is kept).</Notice>
        )}
        <Field id="grace" label="The old secret keeps working" hint="Long enough to move the apps that use it; then it is refused, its holder told why.">
          <select id="grace" style={{ maxWidth: "320px" }} value={grace} onChange={(e) => setGrace(Number(e.currentTarget.value))} aria-describedby="grace-hint">
            {GRACES.map(([s, words]) => (
              <option key={s} value={s}>
                {words}
              </option>
            ))}
          </select>
        </Field>
        <div class="form-actions">
          <button type="submit" class="button primary" disabled={busy}>
            Regenerate
          </button>
          <button type="button" class="button secondary" onClick={onClose}>
            Cancel
          </button>
        </div>
      </form>
    </section>
  );
}
