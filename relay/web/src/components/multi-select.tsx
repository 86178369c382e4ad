import type { ComponentChildren } from "preact";
import { useState } from "preact/hooks";

/** How many choices the list shows at once; a search narrows the rest. */
const SHOWN = 30;

/** One choice of a {@link MultiSelect}. */
export interface Choice {
  id: string;
  /** Its name, searched and shown. */
  label: string;
  /** Shown beside the name, and searched too (a stack's model id). */
  detail?: string;
}

/** The choices whose label, detail or id hold every word of `query`, in any case. */
export function matchChoices(choices: readonly Choice[], query: string): Choice[] {
  const words = query.toLowerCase().split(/\s+/).filter(Boolean);
  if (words.length === 0) return [...choices];
  return choices.filter((c) => {
    const text = `${c.label}\n${c.detail ?? ""}\n${c.id}`.toLowerCase();
    return words.every((w) => text.includes(w));
  });
}

/**
 * Several of many, chosen in a small space: what is chosen shows as chips (each removed with its ×), a search box
 * narrows the choices, and the first {@link SHOWN} matches are ticked or unticked in a list that scrolls.
 */
export function MultiSelect({
  id,
  legend,
  noun,
  one,
  choices,
  value,
  onChange,
  hint,
  error,
}: {
  id: string;
  legend: string;
  /** What is chosen, in the plural ("stacks"). */
  noun: string;
  /** One of them ("stack"). */
  one: string;
  choices: readonly Choice[];
  value: readonly string[];
  onChange: (ids: string[]) => void;
  hint: ComponentChildren;
  error?: string | null;
}) {
  const [query, setQuery] = useState("");
  const found = matchChoices(choices, query);
  const shown = found.slice(0, SHOWN);
  const labelOf = (choiceId: string) => choices.find((c) => c.id === choiceId)?.label ?? choiceId;
  const toggle = (choiceId: string) => onChange(value.includes(choiceId) ? value.filter((x) => x !== choiceId) : [...value, choiceId]);
  return (
    <fieldset class="restrict multi-select" aria-describedby={`${id}-hint${error ? ` ${id}-error` : ""}`}>
      <legend>{legend}</legend>
      {value.length > 0 && (
        <ul class="chips" aria-label={`Chosen ${noun}`}>
          {value.map((v) => (
            <li key={v} class="chip">
              {labelOf(v)}
              <button type="button" class="chip-remove" aria-label={`Remove ${labelOf(v)}`} onClick={() => toggle(v)}>
                ×
              </button>
            </li>
          ))}
        </ul>
      )}
      {choices.length === 0 ? (
        <p class="muted small">No {noun} yet.</p>
      ) : (
        <>
          {choices.length > SHOWN / 3 && (
            <input type="search" id={`${id}-search`} aria-label={`Find ${noun}`} placeholder={`Find ${noun}…`} value={query} onInput={(e) => setQuery(e.currentTarget.value)} maxLength={200} />
          )}
          <div class="choice-list" data-testid={`${id}-choices`}>
            {shown.map((c) => (
              <label key={c.id} class="check-row">
                <input type="checkbox" checked={value.includes(c.id)} onChange={() => toggle(c.id)} /> {c.label}
                {c.detail && <span class="muted mono">{c.detail}</span>}
              </label>
            ))}
            {found.length === 0 && <p class="muted small">No {one} matches “{query}”.</p>}
          </div>
          {found.length > shown.length && (
            <p class="hint" aria-live="polite">
              {found.length - shown.length} more: type to narrow.
            </p>
          )}
        </>
      )}
      {error && (
        <p class="field-error" id={`${id}-error`}>
          {error}
        </p>
      )}
      <p class="hint" id={`${id}-hint`}>
        {hint}
      </p>
    </fieldset>
  );
}
