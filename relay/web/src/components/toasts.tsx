import { useCallback, useRef, useState } from "preact/hooks";

/** How long a toast stays before it goes by itself. */
const TOAST_MS = 5000;
/** At most this many show at once; older ones make room. */
const MAX_SHOWN = 4;

interface Toast {
  id: number;
  text: string;
}

/** The toasts shown and how to add one: `notify` says that an action was done, in words. */
export function useToasts(): { toasts: Toast[]; notify: (text: string) => void; dismiss: (id: number) => void } {
  const [toasts, setToasts] = useState<Toast[]>([]);
  const next = useRef(1);
  const dismiss = useCallback((id: number) => setToasts((list) => list.filter((t) => t.id !== id)), []);
  const notify = useCallback(
    (text: string) => {
      const id = next.current++;
      setToasts((list) => [...list, { id, text }].slice(-MAX_SHOWN));
      setTimeout(() => dismiss(id), TOAST_MS);
    },
    [dismiss],
  );
  return { toasts, notify, dismiss };
}

/** Completed actions, said in a corner for a few seconds (read out by screen readers as they come). */
export function Toasts({ toasts, dismiss }: { toasts: Toast[]; dismiss: (id: number) => void }) {
  return (
    <div class="toasts" role="status" aria-live="polite">
      {toasts.map((t) => (
        <div class="toast" key={t.id} data-testid="toast">
          <span>{t.text}</span>
          <button type="button" class="toast-close" aria-label="Dismiss" onClick={() => dismiss(t.id)}>
            ×
          </button>
        </div>
      ))}
    </div>
  );
}
