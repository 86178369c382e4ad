import { MakinaError } from "../../proto/index.js";

const seconds = (ms: number) => `${ms < 10_000 ? (ms / 1000).toFixed(1) : Math.round(ms / 1000)} s`;

/** Limits of the {@link AdmissionGate}. */
export interface AdmissionLimits {
  /** Requests one stack runs at once. */
  maxInFlightPerStack: number;
  /** Requests one machine runs at once, all its stacks together. */
  maxInFlightPerMachine: number;
  /** Requests that wait for a stack beyond those; more are refused at once. */
  maxQueuePerStack: number;
  /** Longest wait in the queue, ms; then 503. */
  queueTimeoutMs: number;
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
  waiting: Waiter[];
}

interface MachineLoad {
  inFlight: number;
  /** Stacks of this machine with requests waiting, in the order they started waiting. */
  waitingStacks: Set<string>;
}

/**
 * Admission control in front of the machines: each stack and each machine runs at most so many requests at
 * once; beyond that a request waits in its stack's queue, first come first served, for at most
 * `queueTimeoutMs`, and beyond the queue's size it is refused at once. Both refusals are 503
 * `runtime_unavailable` with a Retry-After, so no client waits without a bound and a burst cannot pile up
 * on the relay or a machine. `tryEnter` is the hot path: no promise, no allocation beyond the ticket.
 */
export class AdmissionGate {
  private readonly stacks = new Map<string, StackLoad>();
  private readonly machines = new Map<string, MachineLoad>();
  /** Requests waiting in every queue. */
  waiting = 0;

  constructor(private readonly limits: AdmissionLimits) {}

  /** A place for a request to `stackId` on `machineId` now, or null when it has to wait. */
  tryEnter(stackId: string, machineId: string): Admitted | null {
    const stack = this.stacks.get(stackId);
    const machine = this.machines.get(machineId);
    // Requests already waiting for this stack go first.
    if (stack && (stack.waiting.length > 0 || stack.inFlight >= this.limits.maxInFlightPerStack)) return null;
    if (machine && machine.inFlight >= this.limits.maxInFlightPerMachine) return null;
    return this.enter(stackId, machineId);
  }

  /** Waits for a place in the stack's queue; rejects with 503 when the queue is full or the wait is too long, or with `signal`'s reason. */
  wait(stackId: string, machineId: string, signal?: AbortSignal): Promise<Admitted> {
    const stack = this.stackLoad(stackId);
    if (stack.waiting.length >= this.limits.maxQueuePerStack) {
      this.forget(stackId, machineId);
      return Promise.reject(
        new MakinaError("runtime_unavailable", `The model is at capacity: ${stack.inFlight} requests running and ${stack.waiting.length} waiting. Retry shortly.`, { retryAfterMs: 1000 }),
      );
    }
    if (signal?.aborted) return Promise.reject(MakinaError.from(signal.reason));
    return new Promise<Admitted>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.drop(waiter);
        reject(new MakinaError("runtime_unavailable", `The model stayed at capacity for ${seconds(this.limits.queueTimeoutMs)} while this request waited. Retry shortly.`, { retryAfterMs: 5000 }));
      }, this.limits.queueTimeoutMs);
      const onAbort = () => {
        this.drop(waiter);
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
      stack.waiting.push(waiter);
      this.waiting++;
      this.machineLoad(machineId).waitingStacks.add(stackId);
    });
  }

  /** Requests running and waiting for a stack (for metrics and tests). */
  load(stackId: string): { inFlight: number; waiting: number } {
    const s = this.stacks.get(stackId);
    return { inFlight: s?.inFlight ?? 0, waiting: s?.waiting.length ?? 0 };
  }

  private enter(stackId: string, machineId: string): Admitted {
    this.stackLoad(stackId).inFlight++;
    this.machineLoad(machineId).inFlight++;
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        this.leave(stackId, machineId);
      },
    };
  }

  private leave(stackId: string, machineId: string): void {
    const stack = this.stacks.get(stackId)!;
    const machine = this.machines.get(machineId)!;
    stack.inFlight--;
    machine.inFlight--;
    this.pump(machine);
    this.forget(stackId, machineId);
  }

  /** Lets waiting requests of a machine's stacks in, oldest stack queue first, while the limits allow. */
  private pump(machine: MachineLoad): void {
    for (const stackId of machine.waitingStacks) {
      const stack = this.stacks.get(stackId)!;
      while (stack.waiting.length > 0 && stack.inFlight < this.limits.maxInFlightPerStack && machine.inFlight < this.limits.maxInFlightPerMachine) {
        const waiter = stack.waiting.shift()!;
        this.waiting--;
        waiter.cleanup();
        waiter.resolve(this.enter(waiter.stackId, waiter.machineId));
      }
      if (stack.waiting.length === 0) machine.waitingStacks.delete(stackId);
      if (machine.inFlight >= this.limits.maxInFlightPerMachine) return;
    }
  }

  private drop(waiter: Waiter): void {
    waiter.cleanup();
    const stack = this.stacks.get(waiter.stackId);
    if (stack) {
      const i = stack.waiting.indexOf(waiter);
      if (i >= 0) {
        stack.waiting.splice(i, 1);
        this.waiting--;
      }
      if (stack.waiting.length === 0) this.machines.get(waiter.machineId)?.waitingStacks.delete(waiter.stackId);
    }
    this.forget(waiter.stackId, waiter.machineId);
  }

  private stackLoad(id: string): StackLoad {
    let s = this.stacks.get(id);
    if (!s) this.stacks.set(id, (s = { inFlight: 0, waiting: [] }));
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
    if (s && s.inFlight === 0 && s.waiting.length === 0) this.stacks.delete(stackId);
    const m = this.machines.get(machineId);
    if (m && m.inFlight === 0 && m.waitingStacks.size === 0) this.machines.delete(machineId);
  }
}
