import type { ComponentChildren } from "preact";

/** A labelled form field with its hint and its error in words next to it. */
export function Field({ id, label, hint, error, children }: { id: string; label: string; hint?: ComponentChildren; error?: string | null; children: ComponentChildren }) {
  return (
    <div class={`field${error ? " has-error" : ""}`}>
      <label for={id}>{label}</label>
      {children}
      {hint && !error && (
        <p class="hint" id={`${id}-hint`}>
          {hint}
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
