import type { MachineLoad, MinutePoint, RequestFigures } from "../../api/types.js";
import { formatBytes } from "../../components/format.js";
import { Link } from "../../components/link.js";

const count = (n: number) => n.toLocaleString("en-US");
/** A latency as people read it: milliseconds under a second, seconds above. */
export const formatLatency = (ms: number | null) => (ms === null ? "—" : ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`);
const formatRate = (r: number | null) => (r === null ? "—" : `${(r * 100).toFixed(r > 0 && r < 0.001 ? 2 : 1)}%`);

/** One figure: what it is, its value, and what it covers. */
function Stat({ label, value, note, tone, testId }: { label: string; value: string; note?: string; tone?: "bad" | "warn"; testId?: string }) {
  return (
    <div class={`stat${tone ? ` ${tone}` : ""}`} data-testid={testId}>
      <dt>{label}</dt>
      <dd>
        <span class="stat-value">{value}</span>
        {note && <span class="stat-note">{note}</span>}
      </dd>
    </div>
  );
}

/** The gateway's figures: the last minute's rates, and the last hour's errors and latency (and the runtimes' speed, if asked). */
export function RequestStats({ figures: f, runtimeSpeed = false }: { figures: RequestFigures; runtimeSpeed?: boolean }) {
  return (
    <dl class="stats" aria-label="Requests">
      <Stat label="Requests per minute" value={count(f.requests_per_minute)} note="last 60 s" testId="stat-rpm" />
      <Stat label="Tokens per second" value={f.tokens_per_second.toLocaleString("en-US", { maximumFractionDigits: 1 })} note="generated, last 60 s" testId="stat-tps" />
      <Stat
        label="Error rate"
        value={formatRate(f.error_rate)}
        note={`${count(f.errors)} of ${count(f.requests)} in the last hour`}
        tone={f.error_rate !== null && f.error_rate >= 0.05 ? "bad" : f.error_rate ? "warn" : undefined}
        testId="stat-errors"
      />
      <Stat label="Latency, median" value={formatLatency(f.p50_ms)} note={f.p95_ms === null ? "answered, last hour" : `p95 ${formatLatency(f.p95_ms)} · answered, last hour`} testId="stat-latency" />
      {runtimeSpeed && (
        <Stat
          label="Runtime speed"
          value={f.decode_tokens_per_second === null ? "—" : `${f.decode_tokens_per_second.toLocaleString("en-US", { maximumFractionDigits: 1 })} tok/s`}
          note="per streamed answer, last hour"
          testId="stat-runtime-speed"
        />
      )}
    </dl>
  );
}

/** Requests per minute over the last hour, errors in red on top, drawn as SVG. */
export function MinuteChart({ minutes }: { minutes: MinutePoint[] }) {
  const width = 600;
  const height = 80;
  const max = Math.max(1, ...minutes.map((m) => m.requests));
  const barW = width / Math.max(1, minutes.length);
  const total = minutes.reduce((n, m) => n + m.requests, 0);
  const time = (ms: number) => new Date(ms).toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit" });
  return (
    <figure class="chart minute-chart">
      <svg viewBox={`0 0 ${width} ${height}`} role="img" aria-label={`${count(total)} requests in the last hour, at most ${count(max)} in a minute`} preserveAspectRatio="none">
        <line x1="0" x2={width} y1={height - 0.5} y2={height - 0.5} class="gridline" />
        {minutes.map((m, i) => {
          if (!m.requests) return null;
          const h = Math.max(1, (m.requests / max) * height);
          const e = (m.errors / max) * height;
          return (
            <g key={m.start}>
              <title>{`${time(m.start)}: ${count(m.requests)} requests, ${count(m.errors)} errors, ${count(m.completion_tokens)} tokens generated`}</title>
              <rect x={i * barW + 0.5} y={height - h} width={Math.max(1, barW - 1)} height={h - e} class="series-0" />
              {e > 0 && <rect x={i * barW + 0.5} y={height - e} width={Math.max(1, barW - 1)} height={e} class="errors" />}
            </g>
          );
        })}
      </svg>
      <div class="axis" aria-hidden="true">
        <span style={{ left: "0%" }}>60 min ago</span>
        <span style={{ left: "50%", transform: "translateX(-50%)" }}>30 min ago</span>
        <span style={{ left: "100%", transform: "translateX(-100%)" }}>now</span>
      </div>
      <figcaption class="legend">
        <span>
          <span class="swatch series-0" aria-hidden="true" />
          requests
        </span>
        <span>
          <span class="swatch errors" aria-hidden="true" />
          failed or refused
        </span>
      </figcaption>
    </figure>
  );
}

/** A share as a bar: how full, with its words beside it. */
function Meter({ label, shown = label, percent, words }: { label: string; shown?: string; percent: number | null; words: string }) {
  const p = percent === null ? 0 : Math.max(0, Math.min(100, percent));
  const tone = percent === null ? "unknown" : p >= 90 ? "high" : p >= 70 ? "busy" : "";
  return (
    <div class="meter-row">
      <span class="meter-label" aria-hidden="true">
        {shown}
      </span>
      <span class={`meter ${tone}`} role="meter" aria-label={label} aria-valuemin={0} aria-valuemax={100} aria-valuenow={percent === null ? undefined : Math.round(p)} aria-valuetext={words}>
        <span class="meter-fill" style={{ width: `${p}%` }} />
      </span>
      <span class="meter-words">{words}</span>
    </div>
  );
}

const share = (used: number, total: number) => (total > 0 ? (used / total) * 100 : null);

/** A machine's load as its agent last sampled it: CPU, memory, and each GPU's utilization and memory. */
export function LoadMeters({ load }: { load: MachineLoad }) {
  return (
    <div class="meters" data-testid={`load-${load.machine_id}`}>
      <Meter label="CPU" percent={load.cpu_percent} words={`${Math.round(load.cpu_percent)}%`} />
      <Meter label="Memory" percent={share(load.memory_used_bytes, load.memory_total_bytes)} words={`${formatBytes(load.memory_used_bytes)} of ${formatBytes(load.memory_total_bytes)}`} />
      {load.gpus.map((g) => (
        <div class="gpu" key={g.index} data-testid={`gpu-${load.machine_id}-${g.index}`}>
          <div class="gpu-name">
            GPU {g.index} · {g.name}
          </div>
          <Meter label={`GPU ${g.index} busy`} shown="Busy" percent={g.utilization_percent} words={g.utilization_percent === null ? "not reported" : `${Math.round(g.utilization_percent)}%`} />
          <Meter
            label={`GPU ${g.index} memory`}
            shown="Memory"
            percent={share(g.memory_used_bytes, g.memory_total_bytes)}
            words={g.memory_total_bytes > 0 ? `${formatBytes(g.memory_used_bytes)} of ${formatBytes(g.memory_total_bytes)}` : `${formatBytes(g.memory_used_bytes)} (shared)`}
          />
        </div>
      ))}
      {load.models && <ModelMemoryMeter load={load} models={load.models} />}
    </div>
  );
}

/**
 * The machine's memory budget for models: what its loaded models count against it, stack by stack (a loaded GGUF
 * model: what node-llama-cpp says it holds; otherwise the estimate), and the stacks not loaded now, with why.
 */
function ModelMemoryMeter({ load, models }: { load: MachineLoad; models: NonNullable<MachineLoad["models"]> }) {
  const loaded = models.stacks.filter((st) => st.loaded);
  const idle = models.stacks.filter((st) => !st.loaded && (st.state === "unloaded" || st.state === "unloading"));
  const others = models.stacks.filter((st) => !st.loaded && st.state !== "unloaded" && st.state !== "unloading");
  const budget = models.budget_bytes;
  const limit = models.max_loaded > 0 ? `, at most ${models.max_loaded} loaded` : "";
  return (
    <div class="model-memory" data-testid={`models-${load.machine_id}`}>
      <Meter
        label="Memory budget for models"
        shown="Models"
        percent={share(models.used_bytes, budget)}
        words={budget > 0 ? `${formatBytes(models.used_bytes)} of ${formatBytes(budget)} budget${limit}` : `${formatBytes(models.used_bytes)} (no budget${limit})`}
      />
      {loaded.length > 0 && (
        <ul class="shares small" aria-label={`Models loaded on ${load.name}`}>
          {loaded.map((st) => (
            <li key={st.stack_id}>
              <Link href={`/stacks/${encodeURIComponent(st.stack_id)}`}>{st.name}</Link> · {st.bytes > 0 ? formatBytes(st.bytes) : "size unknown"}
              {st.residency === "on_demand" ? " · on demand" : ""}
            </li>
          ))}
        </ul>
      )}
      {idle.length > 0 && (
        <div class="muted small">
          Unloaded (the next request loads {idle.length === 1 ? "it" : "them"}): {idle.map((st) => st.name).join(", ")}
        </div>
      )}
      {others.length > 0 && <div class="muted small">Not loaded: {others.map((st) => `${st.name} (${st.state})`).join(", ")}</div>}
    </div>
  );
}
