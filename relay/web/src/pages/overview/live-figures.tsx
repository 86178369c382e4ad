import { Notice } from "../../components/notice.js";
import { LoadMeters, MinuteChart, RequestStats } from "./figures.js";
import { useOverview } from "./use-overview.js";

/**
 * One machine's or one stack's live figures, on its page: the machine's load (CPU, memory, GPUs) as its agent
 * last sampled it, and the gateway's requests of the last minute and hour (with the runtime's speed, for a stack).
 */
export function LiveFigures({ machine, stack }: { machine?: string; stack?: string }) {
  const overview = useOverview(machine ? { machine } : { stack });
  const o = overview.data;
  const load = machine ? o?.loads[0] : undefined;
  return (
    <section class="card" aria-labelledby="live-figures" data-testid="live-figures">
      <h2 id="live-figures">{machine ? "Load and requests" : "Requests"}</h2>
      {overview.error && <Notice tone="error">{overview.error.message}</Notice>}
      {!o ? (
        <span class="skeleton-bar" aria-busy="true" />
      ) : (
        <>
          {machine && (load ? <LoadMeters load={load} /> : <p class="muted">{o.machines.online ? "The machine has not reported its load yet." : "Its load shows while it is online."}</p>)}
          <RequestStats figures={o.requests} runtimeSpeed={stack !== undefined} />
          {o.requests.requests > 0 && <MinuteChart minutes={o.requests.minutes} />}
        </>
      )}
    </section>
  );
}
