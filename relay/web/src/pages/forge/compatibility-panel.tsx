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

/** The verdict on a stack and the reason for each part of it, in words. */
export function CompatibilityPanel({ result, pending }: { result: { ok: boolean | null; checks: (Check & { topic?: string })[] } | null; pending?: boolean }) {
  const verdict = !result ? "Choose a machine, a runtime and a model." : result.ok === false ? "This combination cannot run." : result.ok === null ? "Unknown until the machine connects." : "This combination can run.";
  const tone = !result ? "idle" : result.ok === false ? "fail" : result.ok === null ? "warn" : result.checks.some((c) => c.level === "warn") ? "warn" : "ok";
  return (
    <section class={`compat ${tone}`} aria-labelledby="compat-title" aria-live="polite" aria-busy={pending ? "true" : "false"} data-testid="compatibility" data-verdict={tone}>
      <h3 id="compat-title">
        Compatibility{pending ? <span class="spinner small" aria-label="Checking" /> : null}
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
