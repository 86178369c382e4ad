import { useEffect, useState } from "preact/hooks";

/** What the audit log is searched by: an action family, who, to what, and the days from and to (`YYYY-MM-DD`, the browser's). */
export interface AuditFilter {
  family: string;
  actor: string;
  target: string;
  from: string;
  to: string;
}

const NAMES = ["family", "actor", "target", "from", "to"] as const;

/** The filter an address holds (`?actor=kim&from=2026-11-01`), so a search can be reloaded and shared. */
export function filterOf(search: string): AuditFilter {
  const p = new URLSearchParams(search);
  const day = (v: string | null) => (v && /^\d{4}-\d\d-\d\d$/.test(v) ? v : "");
  return { family: p.get("family") ?? "", actor: (p.get("actor") ?? "").slice(0, 200), target: (p.get("target") ?? "").slice(0, 200), from: day(p.get("from")), to: day(p.get("to")) };
}

/** The filter in the page's address. */
export function keepInAddress(f: AuditFilter): void {
  const p = new URLSearchParams();
  for (const name of NAMES) if (f[name]) p.set(name, f[name]);
  const search = p.toString();
  history.replaceState(history.state, "", location.pathname + (search ? `?${search}` : ""));
}

/** The local midnight that ends the day `YYYY-MM-DD`. */
function dayAfter(day: string): Date {
  const [y, m, d] = day.split("-").map(Number) as [number, number, number];
  return new Date(y, m - 1, d + 1);
}

/** The relay's query for a filter: the days as times (the start of `from`, the end of `to`, in the browser's time zone). */
export function queryOf(f: AuditFilter, actions: (family: string) => string | undefined) {
  return {
    action: actions(f.family),
    actor: f.actor.trim() || undefined,
    target: f.target.trim() || undefined,
    since: f.from ? new Date(`${f.from}T00:00:00`).toISOString() : undefined,
    // The start of the day after (a calendar day, 23 or 25 hours long on a clock change).
    until: f.to ? dayAfter(f.to).toISOString() : undefined,
  };
}

/**
 * The audit log's search: an action family, who did it, what it was done to, and a range of days. The words are
 * sent once typing pauses.
 */
export function AuditFilters({ filter, onChange, families }: { filter: AuditFilter; onChange: (f: AuditFilter) => void; families: readonly (readonly [string, string])[] }) {
  const [typed, setTyped] = useState({ actor: filter.actor, target: filter.target });
  useEffect(() => {
    if (typed.actor === filter.actor && typed.target === filter.target) return;
    const timer = setTimeout(() => onChange({ ...filter, ...typed }), 250);
    return () => clearTimeout(timer);
  }, [typed, filter, onChange]);
  return (
    <div class="list-controls audit-filters" role="search" aria-label="Search the audit log">
      <input type="search" aria-label="Who did it" placeholder="Who: a login or user id" value={typed.actor} maxLength={200} onInput={(e) => setTyped({ ...typed, actor: e.currentTarget.value })} />
      <input type="search" aria-label="Done to" placeholder="To what: a name or id" value={typed.target} maxLength={200} onInput={(e) => setTyped({ ...typed, target: e.currentTarget.value })} />
      <select aria-label="Show actions" value={filter.family} onChange={(e) => onChange({ ...filter, family: e.currentTarget.value })}>
        {families.map(([value, label]) => (
          <option key={value} value={value}>
            {label}
          </option>
        ))}
      </select>
      <label class="inline-label small">
        <span>From</span>
        <input type="date" value={filter.from} max={filter.to || undefined} onChange={(e) => onChange({ ...filter, from: e.currentTarget.value })} />
      </label>
      <label class="inline-label small">
        <span>To</span>
        <input type="date" value={filter.to} min={filter.from || undefined} onChange={(e) => onChange({ ...filter, to: e.currentTarget.value })} />
      </label>
    </div>
  );
}
