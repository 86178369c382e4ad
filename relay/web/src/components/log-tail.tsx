import { useEffect, useRef, useState } from "preact/hooks";
import type { ApiError } from "../api/admin-client.js";
import type { LogPage } from "../api/types.js";

/** How often an open log asks for the lines that came since. */
const POLL_MS = 2000;
/** The most lines a page holds (the machine keeps 500 of each): older ones leave as new ones come. */
const KEPT = 1000;

type Line = LogPage["lines"][number];
/** The levels a line is styled by (anything else a machine says is shown as plain). */
const LEVELS = new Set(["info", "warn", "error", "output"]);

/**
 * The last lines of a machine's log (its agent's, or a stack's runtime's), read over its link and followed while
 * the page is open and in view: each read asks for the lines after the last one shown. It stays at the bottom
 * while the reader is there, and holds still when they scroll up; Pause stops reading. Secrets are redacted on
 * the machine, as in its own log.
 */
export function LogTail({ title, read, testId }: { title: string; read: (after: number) => Promise<LogPage>; testId: string }) {
  const [lines, setLines] = useState<Line[]>([]);
  const [truncated, setTruncated] = useState(false);
  const [problem, setProblem] = useState<string | null>(null);
  const [paused, setPaused] = useState(false);
  const [loaded, setLoaded] = useState(false);
  const after = useRef(0);
  const box = useRef<HTMLPreElement>(null);
  const atBottom = useRef(true);
  useEffect(() => {
    if (paused) return;
    let stopped = false;
    /** One read at a time: a slow one (through another relay) is not asked again meanwhile. */
    let reading = false;
    const next = async () => {
      if (document.visibilityState !== "visible" || reading) return;
      reading = true;
      try {
        const page = await read(after.current);
        if (stopped) return;
        setProblem(null);
        setLoaded(true);
        // Lines were dropped on the machine before this reader got them (a first read, or one after a long pause).
        if (page.truncated) setTruncated(true);
        const fresh = page.lines.filter((l) => l.seq > after.current);
        if (fresh.length > 0) {
          after.current = page.next;
          setLines((old) => [...old, ...fresh].slice(-KEPT));
        }
      } catch (err) {
        if (!stopped) setProblem((err as ApiError).message);
      } finally {
        reading = false;
      }
    };
    void next();
    const timer = setInterval(() => void next(), POLL_MS);
    return () => {
      stopped = true;
      clearInterval(timer);
    };
  }, [paused, read]);
  useEffect(() => {
    if (atBottom.current && box.current) box.current.scrollTop = box.current.scrollHeight;
  }, [lines]);
  const time = (ms: number) => new Date(ms).toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit", second: "2-digit" });
  return (
    <section class="card" aria-labelledby={`${testId}-title`} data-testid={testId}>
      <div class="card-head">
        <h2 id={`${testId}-title`}>{title}</h2>
        <button type="button" class="button small secondary" aria-pressed={paused} onClick={() => setPaused(!paused)}>
          {paused ? "Follow" : "Pause"}
        </button>
      </div>
      {problem && <p class="muted small" role="status">{problem}</p>}
      {truncated && <p class="muted small">Some lines were dropped on the machine before they were read here: it keeps its last 500.</p>}
      {loaded && lines.length === 0 && !problem ? (
        <p class="muted">No lines yet.</p>
      ) : (
        <pre
          class="log-tail"
          ref={box}
          tabIndex={0}
          role="log"
          aria-live="off"
          aria-label={title}
          onScroll={(e) => {
            const el = e.currentTarget;
            atBottom.current = el.scrollHeight - el.scrollTop - el.clientHeight < 24;
          }}
        >
          {lines.map((l) => (
            <span key={l.seq} class={`log-line ${LEVELS.has(l.level) ? l.level : "info"}`}>
              <span class="log-time">{time(l.at)}</span> <span class="log-level">{l.level === "output" ? "out" : l.level}</span> {l.text}
            </span>
          ))}
        </pre>
      )}
    </section>
  );
}
