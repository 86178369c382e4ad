import { useEffect } from "preact/hooks";
import type { Overview } from "../../api/types.js";
import { useLive, type Live } from "../../api/use-live.js";
import { useApp } from "../../app-context.js";

/** How often the figures are read again while the page is in view: agents sample their load every 5 s. */
export const OVERVIEW_REFRESH_MS = 5000;

/**
 * The overview of the organization, or of one machine or stack: read again every 5 s while the page is in
 * view, and at once when a machine or stack changes.
 */
export function useOverview(scope: { machine?: string; stack?: string } = {}): Live<Overview> {
  const { client } = useApp();
  const overview = useLive(() => client.call("GET /admin/v1/overview", { query: scope }), ["machine", "stack"], [scope.machine, scope.stack]);
  useEffect(() => {
    const timer = setInterval(() => document.visibilityState === "visible" && overview.reload(), OVERVIEW_REFRESH_MS);
    return () => clearInterval(timer);
  }, [overview.reload]);
  return overview;
}
