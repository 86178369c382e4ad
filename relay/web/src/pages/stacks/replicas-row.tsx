import type { Stack } from "../../api/types.js";
import { Link } from "../../components/link.js";

/** A share of the last hour's requests in words: `60% (120)` (`total` is more than 0). */
function shareWords(n: number, total: number): string {
  return `${Math.round((n / total) * 100)}% (${n.toLocaleString("en-US")})`;
}

/**
 * The Layers card's Replicas row: the other stacks serving the model id, and each one's share of the last hour's
 * requests for it beside this stack's.
 */
export function ReplicasRow({ stack: s }: { stack: Stack }) {
  const total = (s.requests_last_hour ?? 0) + s.replicas.reduce((sum, r) => sum + r.requests_last_hour, 0);
  const sharing = s.state === "deployed" && s.replicas.some((r) => r.state === "deployed");
  return (
    <>
      <dt>Replicas</dt>
      <dd data-testid="stack-replicas">
        Also served by{" "}
        {s.replicas.map((r, i) => (
          <span key={r.id}>
            {i > 0 && ", "}
            <Link href={`/stacks/${r.id}`}>{r.name}</Link> ({r.state})
          </span>
        ))}
        {sharing && (
          <div class="muted small">
            Requests for {s.model_id} are shared: a loaded replica first (to load one, a machine with a place free and the most of its memory budget left), then the
            least busy machine.
          </div>
        )}
        {total > 0 ? (
          <ul class="shares small" data-testid="replica-shares" aria-label="Shares of the requests sent to each in the last hour, refused ones included">
            <li>
              This stack: {shareWords(s.requests_last_hour ?? 0, total)}
            </li>
            {s.replicas.map((r) => (
              <li key={r.id}>
                {r.name}: {shareWords(r.requests_last_hour, total)}
              </li>
            ))}
          </ul>
        ) : (
          <div class="muted small" data-testid="replica-shares">No requests for {s.model_id} in the last hour: no shares yet.</div>
        )}
      </dd>
    </>
  );
}
