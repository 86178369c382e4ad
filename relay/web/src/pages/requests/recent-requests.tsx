import { useState } from "preact/hooks";
import type { ApiError } from "../../api/admin-client.js";
import { useLive } from "../../api/use-live.js";
import { useRefresh } from "../../api/use-refresh.js";
import type { Stack } from "../../api/types.js";
import { useApp, useIsAdmin } from "../../app-context.js";
import { Link } from "../../components/link.js";
import { Notice } from "../../components/notice.js";
import { RequestTable } from "./request-table.js";

/** The captures an admin may choose: hours the prompts and answers are kept. */
const CAPTURES = [
  [0, "Off: keep no prompt or answer"],
  [1, "Keep 1 hour"],
  [24, "Keep 24 hours"],
  [168, "Keep 7 days"],
  [720, "Keep 30 days"],
] as const;

/** A stack's last requests (read again every few seconds), and, for admins, whether its prompts and answers are captured. */
export function RecentRequests({ stack, onChanged }: { stack: Stack; onChanged: () => void }) {
  const { client, notify } = useApp();
  const isAdmin = useIsAdmin();
  const recent = useLive(() => client.call("GET /admin/v1/requests", { query: { stack: stack.id, per_page: 10 } }), [], [stack.id]);
  const [error, setError] = useState<string | null>(null);
  useRefresh(recent.reload);
  /** Bumped to draw the choice again from the stack as it is (after a refused change). */
  const [drawn, setDrawn] = useState(0);
  const capture = async (hours: number) => {
    setError(null);
    try {
      await client.call("PATCH /admin/v1/stacks/:id", { params: { id: stack.id }, body: { capture_hours: hours || null } });
      notify(hours ? `${stack.name} keeps its requests' prompts and answers ${hours} hours.` : `${stack.name} keeps no prompt or answer; what was kept is erased.`);
    } catch (err) {
      setError((err as ApiError).message);
      setDrawn((n) => n + 1);
    }
    onChanged();
  };
  const chosen = stack.capture_hours ?? 0;
  return (
    <section class="card" aria-labelledby="stack-requests">
      <h2 id="stack-requests">Recent requests</h2>
      {(error ?? recent.error) && <Notice tone="error">{error ?? recent.error?.message}</Notice>}
      {isAdmin ? (
        <label class="inline-label">
          <span>Prompts and answers</span>
          <select key={drawn} aria-label="Capture prompts and answers" value={String(chosen)} onChange={(e) => void capture(Number(e.currentTarget.value))}>
            {!CAPTURES.some(([h]) => h === chosen) && <option value={String(chosen)}>Keep {chosen} hours</option>}
            {CAPTURES.map(([h, words]) => (
              <option key={h} value={String(h)}>
                {words}
              </option>
            ))}
          </select>
        </label>
      ) : (
        <p class="muted small">{stack.capture_hours ? `Prompts and answers are kept ${stack.capture_hours} hours.` : "Prompts and answers are not kept."}</p>
      )}
      {recent.data && recent.data.total === 0 ? (
        <p class="muted">No requests yet.</p>
      ) : (
        <RequestTable label="Recent requests" rows={recent.data?.data ?? []} loading={recent.loading && !recent.data} hide={["stack"]} />
      )}
      {recent.data && recent.data.total > 0 && (
        <p class="small">
          <Link href={`/requests?stack=${stack.id}`}>All {recent.data.total.toLocaleString("en-US")} of this stack's requests →</Link>
        </p>
      )}
    </section>
  );
}
