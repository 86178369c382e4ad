import { FairQueue, flexPlaces, MakinaError, TIER_AGING_MS, type QueueEntry, type ServiceTier } from "../../proto/index.js";

const seconds = (ms: number) => `${ms < 10_000 ? (ms / 1000).toFixed(1) : Math.round(ms / 1000)} s`;

/** Limits of the {@link AdmissionGate}. */
export interface AdmissionLimits {
  /** Requests one stack runs at once. */
  maxInFlightPerStack: number;
  /** Requests one machine runs at once, all its stacks together. */
  maxInFlightPerMachine: number;
  /** Requests that wait for a stack beyond those; more are refused at once (or displace a lower tier's newest). */
  maxQueuePerStack: number;
  /** Longest wait in the queue of a `priority` or `default` request, ms; then 503. */
  queueTimeoutMs: number;
  /** Longest wait in the queue of a `flex` request, ms. @default 10 minutes */
  flexQueueTimeoutMs?: number;
  /** A waiting request is ranked one tier higher per this many ms waited. @default {@link TIER_AGING_MS} */
  agingMs?: number;
}

/** Who is waiting: the tier the request is served at and whose turn it takes (its key). */
export interface QueueAsk {
  tier: ServiceTier;
  owner: string;
}

/** A request's place: held while it runs, released once (later calls do nothing). */
export interface Admitted {
  release(): void;
}

interface Waiter {
  stackId: string;
  machineId: string;
  resolve: (ticket: Admitted) => void;
  reject: (err: unknown) => void;
  cleanup: () => void;
}

interface StackLoad {
  inFlight: number;
  /** Of those, `flex` requests: at most {@link flexPlaces} of the stack's places. */
  flexInFlight: number;
  queue: FairQueue<Waiter>;
}

interface MachineLoad {
  inFlight: number;
  /** Stacks of this machine with requests waiting. */
  waitingStacks: Set<string>;
}

/** A request with no tier said: served as `default`, in one turn with every other such request. */
const DEFAULT_ASK: QueueAsk = { tier: "default", owner: "" };

/**
 * Admission control in front of the machines: each stack and each machine runs at most so many requests at
 * once; beyond that a request waits in its stack's queue for at most `queueTimeoutMs` (`flexQueueTimeoutMs` for
 * `flex`), and beyond the queue's size it is refused at once, unless it displaces the newest request of a lower
 * tier (which is refused instead). Both refusals are 503 `runtime_unavailable` with a Retry-After, so no client
 * waits without a bound and a burst cannot pile up on the relay or a machine. The queue's order is a
 * {@link FairQueue}'s: by tier, keys taking turns, aged; a machine at its limit lets in the best ranked request
 * of its stacks' queues. `tryEnter` is the hot path: no promise, no allocation beyond the ticket.
 */
export class AdmissionGate {
  private readonly stacks = new Map<string, StackLoad>();
  private readonly machines = new Map<string, MachineLoad>();
  private readonly agingMs: number;
  private readonly flexTimeoutMs: number;
  /** The places of a stack `flex` requests may hold at once. */
  private readonly flexCap: number;
  /** Requests waiting in every queue. */
  waiting = 0;

  constructor(private readonly limits: AdmissionLimits) {
    this.agingMs = limits.agingMs ?? TIER_AGING_MS;
    this.flexTimeoutMs = limits.flexQueueTimeoutMs ?? 600_000;
    this.flexCap = flexPlaces(limits.maxInFlightPerStack);
  }

  /** A place for a request to `stackId` on `machineId` now (`flex`: of the tier that holds at most {@link flexPlaces} of them), or null when it has to wait. */
  tryEnter(stackId: string, machineId: string, flex = false): Admitted | null {
    const stack = this.stacks.get(stackId);
    const machine = this.machines.get(machineId);
    // Requests already waiting for this stack go first.
    if (stack && (stack.queue.size > 0 || stack.inFlight >= this.limits.maxInFlightPerStack || (flex && stack.flexInFlight >= this.flexCap))) return null;
    if (machine && machine.inFlight >= this.limits.maxInFlightPerMachine) return null;
    return this.enter(stackId, machineId, flex);
  }

  /**
   * Waits for a place in the stack's queue, in the order of `ask`'s tier and owner; rejects with 503 when the
   * queue is full (of requests of its tier or better) or the wait is too long, or with `signal`'s reason.
   */
  wait(stackId: string, machineId: string, signal?: AbortSignal, ask: QueueAsk = DEFAULT_ASK): Promise<Admitted> {
    // A request already canceled takes no place, and no other request's.
    if (signal?.aborted) return Promise.reject(MakinaError.from(signal.reason));
    let stack = this.stackLoad(stackId);
    const flex = ask.tier === "flex";
    // Those waiting may all be `flex` requests held back by their share of places: one that may go in now does.
    if (stack.inFlight < this.limits.maxInFlightPerStack && (this.machines.get(machineId)?.inFlight ?? 0) < this.limits.maxInFlightPerMachine && (!flex || stack.flexInFlight < this.flexCap)) {
      return Promise.resolve(this.enter(stackId, machineId, flex));
    }
    if (stack.queue.size >= this.limits.maxQueuePerStack) {
      const displaced = stack.queue.newestBelow(ask.tier);
      if (!displaced) {
        this.forget(stackId, machineId);
        return Promise.reject(
          new MakinaError("runtime_unavailable", `The model is at capacity: ${stack.inFlight} requests running and ${stack.queue.size} waiting. Retry shortly.`, { retryAfterMs: 1000 }),
        );
      }
      this.drop(displaced);
      displaced.item.reject(new MakinaError("runtime_unavailable", "The model is at capacity, and a request of a higher service tier took this one's place in its queue. Retry shortly.", { retryAfterMs: 1000 }));
      // (The stack's load is made again if that was all it had.)
      stack = this.stackLoad(stackId);
    }
    const timeoutMs = flex ? this.flexTimeoutMs : this.limits.queueTimeoutMs;
    return new Promise<Admitted>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.drop(entry);
        reject(new MakinaError("runtime_unavailable", `The model stayed at capacity for ${seconds(timeoutMs)} while this request waited. Retry shortly.`, { retryAfterMs: 5000 }));
      }, timeoutMs);
      const onAbort = () => {
        this.drop(entry);
        reject(MakinaError.from(signal!.reason));
      };
      const waiter: Waiter = {
        stackId,
        machineId,
        resolve,
        reject,
        cleanup: () => {
          clearTimeout(timer);
          signal?.removeEventListener("abort", onAbort);
        },
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      const entry = stack.queue.push(waiter, ask.tier, ask.owner);
      this.waiting++;
      this.machineLoad(machineId).waitingStacks.add(stackId);
    });
  }

  /** Requests running and waiting for a stack (for metrics and tests). */
  load(stackId: string): { inFlight: number; waiting: number } {
    const s = this.stacks.get(stackId);
    return { inFlight: s?.inFlight ?? 0, waiting: s?.queue.size ?? 0 };
  }

  private enter(stackId: string, machineId: string, flex: boolean): Admitted {
    const stack = this.stackLoad(stackId);
    stack.inFlight++;
    if (flex) stack.flexInFlight++;
    this.machineLoad(machineId).inFlight++;
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        this.leave(stackId, machineId, flex);
      },
    };
  }

  private leave(stackId: string, machineId: string, flex: boolean): void {
    const stack = this.stacks.get(stackId)!;
    const machine = this.machines.get(machineId)!;
    stack.inFlight--;
    if (flex) stack.flexInFlight--;
    machine.inFlight--;
    this.pump(machine);
    this.forget(stackId, machineId);
  }

  /**
   * Lets waiting requests of a machine's stacks in while the limits allow: each time the best ranked next
   * request of the stacks with room (by rank, then the longest waiting); a `flex` one only while its stack's
   * `flex` requests hold fewer than their share of its places.
   */
  private pump(machine: MachineLoad): void {
    const now = performance.now();
    while (machine.inFlight < this.limits.maxInFlightPerMachine) {
      let best: { stack: StackLoad; entry: QueueEntry<Waiter>; eligible: (e: QueueEntry<Waiter>) => boolean } | undefined;
      for (const stackId of machine.waitingStacks) {
        const stack = this.stacks.get(stackId)!;
        if (stack.inFlight >= this.limits.maxInFlightPerStack) continue;
        const eligible = (e: QueueEntry<Waiter>) => e.tier !== "flex" || stack.flexInFlight < this.flexCap;
        const entry = stack.queue.peek(now, eligible);
        if (!entry) continue;
        if (!best || entry.rank < best.entry.rank || (entry.rank === best.entry.rank && entry.since < best.entry.since)) best = { stack, entry, eligible };
      }
      if (!best) return;
      const taken = best.stack.queue.shift(now, best.eligible)!;
      const waiter = taken.item;
      this.waiting--;
      if (best.stack.queue.size === 0) machine.waitingStacks.delete(waiter.stackId);
      waiter.cleanup();
      waiter.resolve(this.enter(waiter.stackId, waiter.machineId, taken.tier === "flex"));
    }
  }

  private drop(entry: QueueEntry<Waiter>): void {
    const waiter = entry.item;
    waiter.cleanup();
    const stack = this.stacks.get(waiter.stackId);
    if (stack) {
      if (stack.queue.remove(entry)) this.waiting--;
      if (stack.queue.size === 0) this.machines.get(waiter.machineId)?.waitingStacks.delete(waiter.stackId);
    }
    this.forget(waiter.stackId, waiter.machineId);
  }

  private stackLoad(id: string): StackLoad {
    let s = this.stacks.get(id);
    if (!s) this.stacks.set(id, (s = { inFlight: 0, flexInFlight: 0, queue: new FairQueue(this.agingMs) }));
    return s;
  }

  private machineLoad(id: string): MachineLoad {
    let m = this.machines.get(id);
    if (!m) this.machines.set(id, (m = { inFlight: 0, waitingStacks: new Set() }));
    return m;
  }

  /** Idle stacks and machines take no memory. */
  private forget(stackId: string, machineId: string): void {
    const s = this.stacks.get(stackId);
    if (s && s.inFlight === 0 && s.queue.size === 0) this.stacks.delete(stackId);
    const m = this.machines.get(machineId);
    if (m && m.inFlight === 0 && m.waitingStacks.size === 0) this.machines.delete(machineId);
  }
}
