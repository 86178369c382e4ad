import type { Overview } from "../../api/types.js";
import { useApp, useIsAdmin } from "../../app-context.js";
import { formatBytes, plural } from "../../components/format.js";
import { Link } from "../../components/link.js";
import { EmptyState, Notice, PageHeader } from "../../components/notice.js";
import { LoadMeters, MinuteChart, RequestStats } from "./figures.js";
import { useOverview } from "./use-overview.js";

/** The fleet's GPUs at a glance: how many, their mean utilization (of those that report it), and their memory. */
function gpuSummary(o: Overview): { value: string; note: string } {
  const gpus = o.loads.flatMap((l) => l.gpus);
  if (gpus.length === 0) return { value: "—", note: "no GPU reported" };
  const busy = gpus.filter((g) => g.utilization_percent !== null);
  const used = gpus.reduce((n, g) => n + g.memory_used_bytes, 0);
  const total = gpus.reduce((n, g) => n + g.memory_total_bytes, 0);
  return {
    value: busy.length ? `${Math.round(busy.reduce((n, g) => n + g.utilization_percent!, 0) / busy.length)}% busy` : "—",
    note: `${plural(gpus.length, "GPU")}, ${formatBytes(used)}${total ? ` of ${formatBytes(total)}` : ""} in use`,
  };
}

/** The organization's first page: what runs and how hard, now and over the last hour, updating live. */
export function OverviewPage() {
  const { navigate } = useApp();
  const isAdmin = useIsAdmin();
  const overview = useOverview();
  const o = overview.data;
  if (!o) {
    return (
      <>
        <PageHeader title="Overview" />
        {overview.error ? <Notice tone="error">{overview.error.message}</Notice> : <div class="skeleton-block" aria-busy="true" aria-label="Loading the overview" />}
      </>
    );
  }
  // An organization that never had a machine starts here; one whose machines are all revoked sees its figures.
  if (o.machines.total === 0 && o.machines.revoked === 0) {
    return (
      <>
        <PageHeader title="Overview" />
        <EmptyState title="No machines yet">
          <p>Add a machine, run the command it shows on the machine, and it appears within seconds. Then build a stack in the Forge and call it with an API key.</p>
          {isAdmin ? (
            <button type="button" class="button primary" onClick={() => navigate("/machines?add")}>
              Add your first machine
            </button>
          ) : (
            <p class="muted">Ask an admin of your organization to add one.</p>
          )}
        </EmptyState>
      </>
    );
  }
  const m = o.machines;
  const s = o.stacks;
  const gpu = gpuSummary(o);
  const silent = m.online - o.loads.length;
  return (
    <>
      <PageHeader title="Overview" subtitle="What runs now and how hard. The figures update every 5 seconds." />
      {overview.error && <Notice tone="error">{overview.error.message} The figures below are from {new Date(o.at).toLocaleTimeString()}.</Notice>}
      {s.runtimes.failed > 0 && (
        <Notice tone="error" testId="attention-runtimes">
          {plural(s.runtimes.failed, "stack")} deployed but {s.runtimes.failed === 1 ? "its runtime has" : "their runtimes have"} failed: requests to {s.runtimes.failed === 1 ? "it" : "them"} get 503. <Link href="/stacks">See the stacks</Link>.
        </Notice>
      )}
      {m.offline > 0 && (
        <Notice tone="warn" testId="attention-offline">
          {plural(m.offline, "machine")} {m.offline === 1 ? "is" : "are"} offline: {m.offline === 1 ? "its" : "their"} stacks answer 503 until {m.offline === 1 ? "it links" : "they link"} again. <Link href="/machines">See the machines</Link>.
        </Notice>
      )}
      <dl class="stats" aria-label="Fleet">
        <div class="stat" data-testid="stat-machines">
          <dt>Machines online</dt>
          <dd>
            <span class="stat-value">
              {m.online} of {m.total}
            </span>
            <span class="stat-note">{[m.offline && `${m.offline} offline`, m.pending && `${m.pending} never connected`, m.revoked && `${m.revoked} revoked`].filter(Boolean).join(", ") || "all linked"}</span>
          </dd>
        </div>
        <div class="stat" data-testid="stat-gpus">
          <dt>GPUs</dt>
          <dd>
            <span class="stat-value">{gpu.value}</span>
            <span class="stat-note">{gpu.note}</span>
          </dd>
        </div>
        <StacksStat stacks={s} />
      </dl>
      <RequestStats figures={o.requests} />
      <section class="card" aria-labelledby="overview-requests">
        <div class="card-head">
          <h2 id="overview-requests">Requests in the last hour</h2>
          <Link href="/requests">Request log</Link>
        </div>
        {o.requests.requests === 0 ? <p class="muted">No requests through the gateway in the last hour.</p> : <MinuteChart minutes={o.requests.minutes} />}
      </section>
      <section class="card" aria-labelledby="overview-machines">
        <div class="card-head">
          <h2 id="overview-machines">Machines online</h2>
          <Link href="/machines">All machines</Link>
        </div>
        {m.online === 0 ? (
          <p class="muted">No machine is online: their stacks answer 503 until one links.</p>
        ) : (
          <div class="load-grid">
            {o.loads.map((l) => (
              <article class="load-card" key={l.machine_id} aria-label={l.name}>
                <h3>
                  <Link href={`/machines/${l.machine_id}`}>{l.name}</Link>
                </h3>
                <LoadMeters load={l} />
              </article>
            ))}
          </div>
        )}
        {silent > 0 && <p class="muted small">{plural(silent, "machine")} online not reporting {silent === 1 ? "its" : "their"} load yet (an agent older than this relay reports none).</p>}
      </section>
    </>
  );
}

/** How many deployed stacks serve, and what the others are doing. */
function StacksStat({ stacks: s }: { stacks: Overview["stacks"] }) {
  return (
    <div class={`stat${s.runtimes.failed || s.runtimes.offline ? " bad" : s.by_state.failed || s.runtimes.loading ? " warn" : ""}`} data-testid="stat-stacks">
      {/* The figure stays short (it keeps to one line in a phone's half-width card); the words say what it counts. */}
      <dt>Deployed stacks serving</dt>
      <dd>
        <span class="stat-value">
          {s.runtimes.ready + s.runtimes.unloaded} of {s.by_state.deployed}
        </span>
        <span class="stat-note">
          {[
            // An on-demand stack whose model is unloaded serves: its next request loads it.
            s.runtimes.unloaded && `${s.runtimes.unloaded} unloaded until asked`,
            s.runtimes.loading && `${s.runtimes.loading} loading`,
            s.runtimes.failed && `${s.runtimes.failed} failed`,
            s.runtimes.offline && `${s.runtimes.offline} on offline machines`,
            s.by_state.deploying && `${s.by_state.deploying} deploying`,
            s.by_state.failed && `${s.by_state.failed} failed to deploy`,
            s.by_state.draft && `${s.by_state.draft} not deployed`,
            s.total > s.by_state.deployed && `${s.total.toLocaleString("en-US")} stacks in all`,
          ]
            .filter(Boolean)
            .join(", ") || "deployed and ready"}
        </span>
      </dd>
    </div>
  );
}
