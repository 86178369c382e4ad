import type { ComponentChildren } from "preact";
import { useRef, useState } from "preact/hooks";
import { useEscape } from "./use-escape.js";

/**
 * A row's less used actions behind one button (⋯, named "More actions for …"), so a table row keeps one line of buttons: a disclosure
 * that closes once an action in it is chosen, when Escape is pressed (the focus back on its button), or when the
 * focus leaves it.
 */
export function RowMenu({ label, children }: { label: string; children: ComponentChildren }) {
  const [open, setOpen] = useState(false);
  const box = useRef<HTMLSpanElement>(null);
  const button = useRef<HTMLButtonElement>(null);
  // Only an open menu takes Escape: a confirmation shown meanwhile keeps its own.
  useEscape(() => {
    setOpen(false);
    button.current?.focus();
  }, open);
  return (
    <span class="row-menu" ref={box} onFocusOut={(e) => !box.current?.contains(e.relatedTarget as Node | null) && setOpen(false)}>
      <button type="button" class="button small secondary" aria-label={label} title={label} aria-expanded={open} ref={button} onClick={() => setOpen(!open)}>
        ⋯
      </button>
      {open && (
        <span class="row-menu-items" onClick={(e) => (e.target as HTMLElement).closest("button") && setOpen(false)}>
          {children}
        </span>
      )}
    </span>
  );
}
