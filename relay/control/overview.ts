import type { MachineLoad as WireLoad, ModelMemory, Overview, RequestFigures as WireFigures, StackState } from "../admin-contract/index.js";
import type { Actor } from "../auth/index.js";
import type { ReceivedLoad } from "../link/index.js";
import type { Machine, RequestFigures } from "../store/index.js";
import type { ControlContext } from "./control-context.js";
import { stacksCounted } from "./stack-facts.js";

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const STACK_STATES: readonly StackState[] = ["draft", "deploying", "deployed", "failed", "undeploying"];

/** The request log's figures as the overview gives them: every one of the last 60 minutes, zeros included. */
export function requestFigures(f: RequestFigures, now: number): WireFigures {
  const byMinute = new Map(f.minutes.map((m) => [m.minute, m]));
  const current = Math.floor(now / MINUTE);
  const minutes = Array.from({ length: 60 }, (_, i) => {
    const minute = current - 59 + i;
    const m = byMinute.get(minute);
    return { start: minute * MINUTE, requests: m?.requests ?? 0, errors: m?.errors ?? 0, completion_tokens: m?.completionTokens ?? 0 };
  });
  const requests = f.minutes.reduce((n, m) => n + m.requests, 0);
  const errors = f.minutes.reduce((n, m) => n + m.errors, 0);
  return {
    requests_per_minute: f.recentRequests,
    tokens_per_second: Math.round((f.recentCompletionTokens / 60) * 10) / 10,
    requests,
    errors,
    error_rate: requests > 0 ? errors / requests : null,
    prompt_tokens: f.minutes.reduce((n, m) => n + m.promptTokens, 0),
    completion_tokens: f.minutes.reduce((n, m) => n + m.completionTokens, 0),
    p50_ms: f.p50Ms,
    p95_ms: f.p95Ms,
    decode_tokens_per_second: f.decodeTokensPerSecond,
    minutes,
  };
}

/** A machine's memory budget for models and each of its stacks' count, named as the organization's stacks are. */
function modelMemory(m: Machine, names: ReadonlyMap<string, string>): ModelMemory | null {
  const memory = m.inventory?.memory;
  if (!memory) return null;
  const stacks = stacksCounted(m, names).map((st) => ({ stack_id: st.stackId, name: st.name, bytes: st.bytes, loaded: st.loaded, residency: st.residency, state: st.state }));
  return { budget_bytes: memory.budgetBytes, used_bytes: memory.usedBytes, max_loaded: memory.maxLoaded, stacks };
}

const wireLoad = (m: Machine, { load, receivedAt }: ReceivedLoad, names: ReadonlyMap<string, string>): WireLoad => ({
  machine_id: m.id,
  name: m.name,
  cpu_percent: load.cpuPercent,
  memory_used_bytes: load.memoryUsedBytes,
  memory_total_bytes: load.memoryTotalBytes,
  gpus: load.gpus.map((g) => ({ index: g.index, name: g.name, utilization_percent: g.utilizationPercent < 0 ? null : g.utilizationPercent, memory_used_bytes: g.memoryUsedBytes, memory_total_bytes: g.memoryTotalBytes })),
  received_at: receivedAt,
  models: modelMemory(m, names),
});

/**
 * The overview: what an organization (or one of its machines, or one stack) runs and how hard, made on each call
 * from the store, the machines' latest loads and the request log. Anyone of the organization sees it; a machine or
 * stack named must be one of the organization's (another's reads as not found).
 */
export async function overviewOf(c: ControlContext, actor: Actor, ask: { org?: string | null; machine?: string; stack?: string }, now: () => number = Date.now): Promise<Overview> {
  const orgId = c.policy(actor).org(ask.org).id;
  const scopedStack = ask.stack !== undefined ? await c.stack(orgId, ask.stack) : undefined;
  const scopedMachine = ask.machine !== undefined ? await c.machine(orgId, ask.machine) : undefined;
  const [allMachines, allStacks] = await Promise.all([c.store.machines.listByOrg(orgId), c.store.stacks.listByOrg(orgId)]);
  const machines = scopedStack ? allMachines.filter((m) => m.id === scopedStack.machineId) : scopedMachine ? [scopedMachine] : allMachines;
  const stacks = scopedStack ? allStacks.filter((s) => s.id === scopedStack.id) : scopedMachine ? allStacks.filter((s) => s.machineId === scopedMachine.id) : allStacks;
  const at = now();
  const online = machines.filter((m) => m.state === "online" && m.revokedAt === null);
  const [loads, figures] = await Promise.all([c.deps.loadsOf(online.map((m) => m.id)), c.deps.requests.figures(orgId, { stackId: scopedStack?.id, machineId: scopedMachine?.id }, at - HOUR, at - MINUTE)]);
  const live = machines.filter((m) => m.revokedAt === null);
  const names = new Map(allStacks.map((st) => [st.id, st.name]));
  const byState = Object.fromEntries(STACK_STATES.map((st) => [st, stacks.filter((s) => s.state === st).length])) as Record<StackState, number>;
  // A runtime serves only while its machine is online: the state it last reported says nothing otherwise.
  const onlineIds = new Set(online.map((m) => m.id));
  const runtimes = { ready: 0, loading: 0, failed: 0, unloaded: 0, unknown: 0, offline: 0 };
  for (const s of stacks) {
    if (s.state !== "deployed") continue;
    const state = s.runtimeState;
    if (!onlineIds.has(s.machineId)) runtimes.offline++;
    else if (state === "ready" || state === "loading" || state === "failed") runtimes[state]++;
    else if (state === "unloaded" || state === "unloading") runtimes.unloaded++;
    else runtimes.unknown++;
  }
  return {
    object: "overview",
    org_id: orgId,
    at,
    scope: { machine: scopedMachine?.id ?? null, stack: scopedStack?.id ?? null },
    machines: {
      total: live.length,
      online: online.length,
      offline: live.filter((m) => m.state === "offline").length,
      pending: live.filter((m) => m.state === "pending").length,
      revoked: machines.length - live.length,
    },
    loads: online.flatMap((m) => {
      const load = loads.get(m.id);
      return load ? [wireLoad(m, load, names)] : [];
    }),
    stacks: { total: stacks.length, by_state: byState, runtimes },
    requests: requestFigures(figures, at),
  };
}
