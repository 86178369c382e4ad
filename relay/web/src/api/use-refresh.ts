import { useEffect } from "preact/hooks";

/** How often what changes by itself (use, loads, the request log) is read again while a page is in view. */
export const REFRESH_MS = 5000;

/**
 * Calls `reload` every `ms` while the page is in view and `on` holds: for figures no event announces (requests
 * served, tokens, a machine's load), which change by the second.
 */
export function useRefresh(reload: () => void, { ms = REFRESH_MS, on = true }: { ms?: number; on?: boolean } = {}): void {
  useEffect(() => {
    if (!on) return;
    const timer = setInterval(() => document.visibilityState === "visible" && reload(), ms);
    return () => clearInterval(timer);
  }, [reload, ms, on]);
}
