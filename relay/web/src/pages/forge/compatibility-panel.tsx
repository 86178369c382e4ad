import type { Check } from "../../api/types.js";

const TOPICS: Record<string, string> = {
  runtime: "Runtime",
  format: "Model format",
  memory: "Memory",
  disk: "Disk",
  endpoint: "Endpoint",
  layers: "Layers",
};

const ICONS = { ok: "✓", warn: "!", fail: "✕" } as const;

type Verdictable = { ok: boolean | null; checks: (Check & { topic?: string })[] };

/**
 * The verdict in words, and its tone. `awaiting` says what is still to choose (a model): until then nothing is
 * judged, unless a choice made already fails.
 */
export function verdictOf(result: Verdictable | null, awaiting?: string | null): { verdict: string; tone: "idle" | "fail" | "warn" | "ok" } {
  if (!result) return { verdict: awaiting ?? "Choose a machine, a runtime and a model.", tone: "idle" };
  if (result.ok === false) return { verdict: "This combination cannot run.", tone: "fail" };
  if (awaiting) return { verdict: awaiting, tone: "idle" };
  if (result.ok === null) return { verdict: "Unknown until the machine connects.", tone: "warn" };
  return { verdict: "This combination can run.", tone: result.checks.some((c) => c.level === "warn") ? "warn" : "ok" };
}

/** The verdict on a stack and the reason for each part of it, in words. */
export function CompatibilityPanel({ result, pending, awaiting }: { result: Verdictable | null; pending?: boolean; awaiting?: string | null }) {
  const { verdict, tone } = verdictOf(result, awaiting);
  return (
    <section class={`compat ${tone}`} aria-labelledby="compat-title" aria-live="polite" aria-busy={pending ? "true" : "false"} data-testid="compatibility" data-verdict={tone}>
      <h3 id="compat-title">
        Compatibility{pending ? <span class="spinner small" role="img" aria-label="Checking" /> : null}
      </h3>
      <p class="verdict">{verdict}</p>
      {result && (
        <ul class="checks">
          {result.checks.map((c, i) => (
            <li key={i} class={`check ${c.level}`} data-level={c.level} data-topic={c.topic ?? ""}>
              <span class="icon" aria-label={c.level}>
                {ICONS[c.level]}
              </span>
              <span>
                {c.topic && <strong>{TOPICS[c.topic] ?? c.topic}: </strong>}
                {c.message}
              </span>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
