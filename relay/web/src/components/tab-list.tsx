import type { ComponentChildren } from "preact";
import { useRef } from "preact/hooks";

/** Where a key press in a tab list moves the selection, from tab `at` of `count`; undefined for a key it leaves alone. */
export function tabKeyTarget(key: string, at: number, count: number): number | undefined {
  switch (key) {
    case "ArrowRight":
    case "ArrowDown":
      return (at + 1) % count;
    case "ArrowLeft":
    case "ArrowUp":
      return (at - 1 + count) % count;
    case "Home":
      return 0;
    case "End":
      return count - 1;
    default:
      return undefined;
  }
}

/**
 * Tabs as the WAI-ARIA pattern has them: one stop of the Tab key (the chosen tab), arrow keys, Home and End move
 * between tabs and choose at once, and the panel is named by its tab.
 */
export function TabList<T extends string>({
  id,
  label,
  tabs,
  value,
  onChange,
  children,
}: {
  /** Prefix of the tabs' and panel's element ids, unique on the page. */
  id: string;
  /** What the tabs choose between, for assistive technology. */
  label: string;
  tabs: readonly { value: T; label: string }[];
  value: T;
  onChange: (value: T) => void;
  /** The chosen tab's panel. */
  children: ComponentChildren;
}) {
  const list = useRef<HTMLDivElement>(null);
  const at = Math.max(0, tabs.findIndex((t) => t.value === value));
  const onKeyDown = (e: KeyboardEvent) => {
    const next = tabKeyTarget(e.key, at, tabs.length);
    if (next === undefined) return;
    e.preventDefault();
    onChange(tabs[next]!.value);
    list.current?.querySelectorAll<HTMLButtonElement>("[role=tab]")[next]?.focus();
  };
  return (
    <>
      <div class="tabs" role="tablist" aria-label={label} ref={list} onKeyDown={onKeyDown}>
        {tabs.map((t) => (
          <button
            key={t.value}
            id={`${id}-tab-${t.value}`}
            type="button"
            role="tab"
            aria-selected={t.value === value}
            aria-controls={`${id}-panel`}
            tabIndex={t.value === value ? 0 : -1}
            class={t.value === value ? "tab active" : "tab"}
            onClick={() => onChange(t.value)}
          >
            {t.label}
          </button>
        ))}
      </div>
      <div id={`${id}-panel`} role="tabpanel" aria-labelledby={`${id}-tab-${value}`}>
        {children}
      </div>
    </>
  );
}
