import { useLayoutEffect, useRef } from "preact/hooks";

/**
 * Escape closes what is open (a panel, a confirmation), as it does everywhere else: while `active`, a press of
 * Escape anywhere on the page calls `onEscape`, once (the first of several open takes it).
 */
export function useEscape(onEscape: () => void, active = true): void {
  const latest = useRef(onEscape);
  latest.current = onEscape;
  // Listening from the moment it shows (a layout effect runs as the page changes, an effect only after the next
  // paint): an Escape pressed at once is not lost.
  useLayoutEffect(() => {
    if (!active) return;
    const onKey = (e: KeyboardEvent) => {
      if (e.key !== "Escape" || e.defaultPrevented) return;
      e.preventDefault();
      latest.current();
    };
    document.addEventListener("keydown", onKey);
    return () => document.removeEventListener("keydown", onKey);
  }, [active]);
}
