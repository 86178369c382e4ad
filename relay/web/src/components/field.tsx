import type { ComponentChildren } from "preact";

/** A labelled form field with its hint and its error in words next to it. */
export function Field({ id, label, hint, error, children }: { id: string; label: string; hint?: ComponentChildren; error?: string | null; children: ComponentChildren }) {
  return (
    <div class={`field${error ? " has-error" : ""}`}>
      <label for={id}>{label}</label>
      {children}
      {hint && !error && (
        <p class="hint" id={`${id}-hint`}>
          {typeof hint === "string" ? withCode(hint) : hint}
        </p>
      )}
      {error && (
        <p class="field-error" id={`${id}-error`} role="alert">
          {error}
        </p>
      )}
    </div>
  );
}

/** Describes a field's input by its hint or error, for screen readers. */
export function describedBy(id: string, error?: string | null): string {
  return error ? `${id}-error` : `${id}-hint`;
}

/** Words with `code` in backticks, the backticks shown as code (a command, a field's name), never as backticks. */
export function withCode(text: string): ComponentChildren {
  const parts = text.split("`");
  // An odd backtick out stays as written.
  if (parts.length % 2 === 0) return text;
  return parts.map((part, i) => (i % 2 === 1 ? <code key={i}>{part}</code> : part));
}
