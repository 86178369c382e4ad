import type { Deployment, DeploymentStep } from "../../api/types.js";
import { formatBytes, formatDuration } from "../../components/format.js";
import { StateBadge } from "../../components/state-badge.js";

const STEP_NAMES: Record<string, string> = {
  install_runtime: "Install runtime",
  pull_model: "Pull model",
  configure_endpoint: "Configure endpoint",
};

function num(v: unknown): number | null {
  return typeof v === "number" && Number.isFinite(v) ? v : null;
}

function PullProgress({ step }: { step: DeploymentStep }) {
  const d = step.detail ?? {};
  const done = num(d.done_bytes);
  const total = num(d.total_bytes);
  const rate = num(d.bytes_per_second);
  const eta = num(d.eta_seconds);
  const size = num(d.size_bytes);
  if (step.state === "succeeded") {
    return <span class="muted">{size !== null ? `${formatBytes(size)} on disk, checksum verified` : "on disk"}</span>;
  }
  if (done === null) return null;
  const pct = total ? Math.min(100, (done / total) * 100) : null;
  return (
    <div class="progress-line">
      <progress max={total ?? undefined} value={total ? done : undefined} aria-label="Download progress">
        {pct !== null ? `${pct.toFixed(0)}%` : ""}
      </progress>
      <span class="muted small">
        {formatBytes(done)}
        {total ? ` of ${formatBytes(total)}` : ""}
        {rate ? ` · ${formatBytes(rate)}/s` : ""}
        {eta !== null && step.state === "running" ? ` · ${formatDuration(eta)} left` : ""}
        {typeof d.stage === "string" && d.stage !== "downloading" ? ` · ${d.stage}` : ""}
      </span>
    </div>
  );
}

/** The steps of a deployment (install → pull → configure), each with its state, progress and error text. */
export function DeploymentProgress({ deployment }: { deployment: Deployment }) {
  return (
    <ol class="steps" aria-label="Deploy steps" data-testid="deploy-steps">
      {deployment.steps.map((step) => (
        <li key={step.seq} class={`step ${step.state}`} data-step={step.kind} data-state={step.state}>
          <div class="step-head">
            <span class="step-name">{STEP_NAMES[step.kind] ?? step.kind}</span>
            {deployment.state === "failed" && step.state === "pending" ? <StateBadge state="draft" label="not run" /> : <StateBadge state={step.state} />}
          </div>
          {step.kind === "pull_model" && <PullProgress step={step} />}
          {step.error && <p class="field-error">{step.error}</p>}
        </li>
      ))}
    </ol>
  );
}
