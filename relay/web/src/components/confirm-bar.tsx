import { useEscape } from "./use-escape.js";

/** A breaking action asked first: the question in words, the button that does it, and Keep (Escape keeps too). */
export function ConfirmBar({ question, button, busy, onConfirm, onKeep }: { question: string; button: string; busy?: boolean; onConfirm: () => void; onKeep: () => void }) {
  useEscape(onKeep, !busy);
  return (
    <span class="confirm" role="group" aria-label={question}>
      <span>{question}</span>
      <button type="button" class="button small danger" disabled={busy} onClick={onConfirm}>
        {button}
      </button>
      <button type="button" class="button small secondary" onClick={onKeep}>
        Keep
      </button>
    </span>
  );
}
