import type { Overview } from "../../api/types.js";
import { useLive, type Live } from "../../api/use-live.js";
import { useRefresh } from "../../api/use-refresh.js";
import { useApp } from "../../app-context.js";

/**
 * The overview of the organization, or of one machine or stack: read again every 5 s while the page is in
 * view, and at once when a machine or stack changes.
 */
export function useOverview(scope: { machine?: string; stack?: string } = {}): Live<Overview> {
  const { client } = useApp();
  const overview = useLive(() => client.call("GET /admin/v1/overview", { query: scope }), ["machine", "stack"], [scope.machine, scope.stack]);
  // Agents sample their load every 5 s: read as often.
  useRefresh(overview.reload);
  return overview;
}
