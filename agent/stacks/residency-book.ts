import { MakinaError } from "../../proto/index.js";

/** A runtime loaded (or loading) on this machine, as the book counts it. */
export interface Resident {
  stackId: string;
  /** Whether it may be unloaded now: an on-demand stack's runtime, loaded, with no request in flight or waiting. */
  evictable(): boolean;
  /** When its last request ended (the least recently used goes first). */
  lastUsedAt(): number;
  /** Unloads it to make room; it leaves the book once unloaded. */
  evict(): Promise<void>;
}

/** What the book holds when a load finds no room: each resident and why it stays. */
function holders(residents: Resident[]): string {
  return residents.map((r) => r.stackId).join(", ");
}

/**
 * The runtimes loaded on this machine, and the one rule that keeps them within its limit (`--max-loaded`):
 * before a load, on-demand runtimes with nothing in flight are unloaded, least recently used first, until there
 * is room. Never an `always` stack's, never one serving a request. The agent is the one authority for its
 * machine's memory: every load, whichever relay's request caused it, goes through here.
 */
export class ResidencyBook {
  private readonly residents = new Map<string, Resident>();
  private readonly waiting = new Set<() => void>();

  /** `maxLoaded`: runtimes loaded at once; 0: no limit. */
  constructor(private readonly maxLoaded: number) {}

  /** The stacks whose runtimes are loaded (or loading) now. */
  loaded(): string[] {
    return [...this.residents.keys()];
  }

  /**
   * Counts `resident` as loaded, once there is room: idle on-demand runtimes are unloaded, least recently used first,
   * until the machine holds fewer than its limit. With none to unload, waits for one to become idle (a request
   * ending) until `signal` aborts, or (with `wait` false: an `always` stack's deploy) refuses at once; either way
   * 503 `insufficient_memory` naming what holds the machine.
   */
  async admit(resident: Resident, signal: AbortSignal, wait = true): Promise<void> {
    for (;;) {
      const others = [...this.residents.values()].filter((r) => r.stackId !== resident.stackId);
      if (this.maxLoaded === 0 || others.length < this.maxLoaded) {
        // Counted before this returns: a second load making room at the same moment sees this one.
        this.residents.set(resident.stackId, resident);
        return;
      }
      const idle = others.filter((r) => r.evictable()).sort((a, b) => a.lastUsedAt() - b.lastUsedAt());
      if (idle[0]) {
        await idle[0].evict();
        continue;
      }
      if (!wait || signal.aborted) {
        throw new MakinaError("insufficient_memory", `This machine holds ${others.length} loaded runtimes, its limit (--max-loaded ${this.maxLoaded}), and none can be unloaded now: ${holders(others)} (serving requests, loading, or always loaded).`, { retryAfterMs: 5000 });
      }
      await this.changed(signal);
    }
  }

  /** A runtime left the machine (unloaded, failed to load, removed). */
  leave(stackId: string): void {
    if (this.residents.delete(stackId)) this.notify();
  }

  /** Something may have become evictable (a request ended): loads waiting for room look again. */
  notify(): void {
    for (const wake of [...this.waiting]) wake();
  }

  private changed(signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const wake = () => {
        this.waiting.delete(wake);
        signal.removeEventListener("abort", wake);
        resolve();
      };
      this.waiting.add(wake);
      signal.addEventListener("abort", wake, { once: true });
    });
  }
}
