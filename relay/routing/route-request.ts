import { MakinaError } from "../../proto/index.js";
import type { ApiKeyRecord, Stack } from "../store/index.js";
import type { AgentSession } from "../link/index.js";
import { rendezvousScore } from "./prompt-affinity.js";

/** Stacks of the key's organization that serve `modelId` and that the key may use. */
export function stacksForKey(directory: { servingModel(orgId: string, modelId: string): Stack[] }, key: ApiKeyRecord, modelId: string): Stack[] {
  const serving = directory.servingModel(key.orgId, modelId);
  if (serving.length === 0) {
    throw new MakinaError("model_not_found", `The model \`${modelId}\` does not exist or is not deployed.`, { param: "model" });
  }
  const allowed = serving.filter((s) => keyAllowsStack(key, s));
  if (allowed.length === 0) {
    throw new MakinaError("model_access_denied", `This API key does not have access to the model \`${modelId}\`.`, { param: "model" });
  }
  return allowed;
}

/** Whether a key's stack and machine restrictions let it reach a stack. */
export function keyAllowsStack(key: ApiKeyRecord, stack: Stack): boolean {
  if (key.stackIds && !key.stackIds.includes(stack.id)) return false;
  if (key.machineIds && !key.machineIds.includes(stack.machineId)) return false;
  return true;
}

/**
 * What routing needs to know of a machine's link (`loaded` absent: every stack it serves counts as loaded;
 * `roomToLoad` absent: what it has free is not known, as none).
 */
export type RoutableSession = Pick<AgentSession, "state" | "readyStacks" | "inFlight" | "congested"> & Partial<Pick<AgentSession, "loaded" | "readySince" | "roomToLoad" | "inFlightFor">>;

/**
 * Where the gateway sends a request: a machine's link on this relay (an `AgentSession`), or a machine linked to
 * another relay, reached through it (relay/cluster).
 */
export type InferenceTarget = RoutableSession &
  Pick<AgentSession, "infer"> & {
    /** True for a machine linked to another relay: that relay applies the machine's admission, not this one. */
    readonly admittedWhereLinked?: boolean;
  };

/**
 * A replica's place in the order (lower first): loaded or not; then, to load it, whether its machine has a place free
 * under `--max-loaded` and how much of its memory budget is free; then its machine's requests in flight.
 */
type Rank = [unloaded: number, noSlot: number, lessFree: number, inFlight: number];

/** Whether rank `a` comes before `b` (-1), after it (1) or ties (0). */
function compareRanks(a: Rank, b: Rank): number {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i]! < b[i]! ? -1 : 1;
  return 0;
}

/** A machine that has said nothing of what it has free. */
const NO_ROOM = { slot: true, bytes: 0 };

/**
 * Picks where a request runs: among the allowed stacks (the replicas serving its model), those whose machine is
 * online, whose runtime is ready (or on demand) and whose link is draining; a loaded one before one that must load
 * first, and of those that must load, one whose machine has a place free under its `--max-loaded`, then the one
 * whose memory budget has the most left free (as its machine last said: one that said nothing counts as none);
 * then the one whose machine has the fewest requests in flight; and among
 * equals, each in turn (`turn`, a number counting requests, picks which), so two replicas on one machine share its
 * requests. Machines whose link is not draining (the agent does not read what the relay writes) get no new
 * requests: 503 when only they are left.
 */
export function pickTarget<S extends RoutableSession = AgentSession>(
  registry: { get(machineId: string): S | undefined },
  stacks: Stack[],
  turn = 0,
  affinity?: () => number | undefined,
  stackWaiting?: (stackId: string) => number,
): { stack: Stack; session: S } {
  let best: Rank | undefined;
  let ties: { stack: Stack; session: S }[] = [];
  const loaded: { stack: Stack; session: S }[] = [];
  let anyOnline = false;
  let anyCongested = false;
  for (const stack of stacks) {
    const session = registry.get(stack.machineId);
    if (!session || session.state !== "open") continue;
    anyOnline = true;
    if (!session.readyStacks.has(stack.id)) continue;
    if (session.congested) {
      anyCongested = true;
      continue;
    }
    const unloaded = session.loaded?.(stack.id) === false;
    // Kept only where affinity could choose among several.
    if (!unloaded && stacks.length > 1) loaded.push({ stack, session });
    const room = unloaded ? (session.roomToLoad?.() ?? NO_ROOM) : NO_ROOM;
    const rank: Rank = [unloaded ? 1 : 0, unloaded && !room.slot ? 1 : 0, unloaded ? -room.bytes : 0, session.inFlight];
    const order = best ? compareRanks(rank, best) : -1;
    if (order < 0) {
      best = rank;
      ties = [{ stack, session }];
    } else if (order === 0) ties.push({ stack, session });
  }
  if (loaded.length > 1) {
    const key = affinity?.();
    if (key !== undefined) return byAffinity(loaded, key, stackWaiting);
  }
  if (ties.length) return ties[turn % ties.length]!;
  if (anyCongested) {
    throw new MakinaError("runtime_unavailable", "The machine serving this model is not keeping up with its link. Retry shortly.", { retryAfterMs: 1000 });
  }
  if (anyOnline) {
    throw new MakinaError("runtime_unavailable", "The runtime serving this model is not ready yet. Retry shortly.", { retryAfterMs: 5000 });
  }
  throw new MakinaError("machine_offline", "Every machine serving this model is offline.", { retryAfterMs: 5000 });
}

/**
 * Where a request goes among loaded replicas, by the prompt it shares with others (`affinity`, see
 * {@link promptAffinity}): each replica's rendezvous score orders them (the same order on every relay, and a
 * replica that leaves moves only its own requests), and the first that is not overloaded takes it: overloaded
 * is more than 25% above the replicas' average requests in flight. When every replica's machine is linked to this
 * relay, a replica's requests are its stack's (two replicas on one machine are told apart): those on its machine's
 * link plus those waiting at this relay's admission for it (`stackWaiting`); when one is linked to another relay,
 * every replica counts its machine's, the one count every relay has of every machine.
 */
function byAffinity<T extends { stack: Stack; session: RoutableSession }>(replicas: T[], affinity: number, stackWaiting?: (stackId: string) => number): T {
  const perStack = replicas.every((r) => r.session.inFlightFor && !(r.session as { admittedWhereLinked?: boolean }).admittedWhereLinked);
  const loads = replicas.map((r) => (perStack ? r.session.inFlightFor!(r.stack.id) + (stackWaiting?.(r.stack.id) ?? 0) : r.session.inFlight));
  const most = (loads.reduce((a, b) => a + b, 0) / replicas.length) * 1.25;
  const ordered = replicas.map((r, i) => ({ r, load: loads[i]!, score: rendezvousScore(affinity, r.stack.id) })).sort((a, b) => b.score - a.score);
  return (ordered.find((o) => o.load <= most) ?? ordered[0]!).r;
}
