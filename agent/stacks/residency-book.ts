import { MakinaError, sizeInWords } from "../../proto/index.js";
import { WakeList } from "../flow/index.js";

/** A runtime loaded (or loading) on this machine, as the book counts it. */
export interface Resident {
  stackId: string;
  /** What people call it: the stack's model id. */
  name: string;
  /** The memory it needs (or holds) loaded, bytes; 0: not known. */
  bytes(): number;
  /** Whether it may be unloaded now: an on-demand stack's runtime, loaded, with no request in flight or waiting. */
  evictable(): boolean;
  /** When its last request ended (the least recently used goes first). */
  lastUsedAt(): number;
  /** Unloads it to make room; it leaves the book once unloaded. */
  evict(): Promise<void>;
}

/** The machine's limits: runtimes loaded at once, and the memory they may use. */
export interface ResidencyLimits {
  /** Runtimes loaded at once (`--max-loaded`); 0: no limit. */
  maxLoaded: number;
  /** Bytes the loaded runtimes may use together (`--memory-budget`); 0: no limit. */
  budgetBytes: number;
}

/** What the book holds when a load finds no room: each resident with the memory it counts. */
function holders(residents: Resident[]): string {
  return residents.map((r) => (r.bytes() ? `${r.name} (${sizeInWords(r.bytes())})` : r.name)).join(", ");
}

/**
 * The runtimes loaded on this machine, and the one rule that keeps them within its limits (`--max-loaded`,
 * `--memory-budget`): before a load, on-demand runtimes with nothing in flight are unloaded, least recently used
 * first, until the new one fits beside the others. Never an `always` stack's, never one serving a request. The
 * agent is the one authority for its machine's memory: every load, whichever relay's request caused it, goes
 * through here.
 */
export class ResidencyBook {
  private readonly residents = new Map<string, Resident>();
  private readonly waiting = new WakeList();

  constructor(readonly limits: ResidencyLimits) {}

  /** The stacks whose runtimes are loaded (or loading) now. */
  loaded(): string[] {
    return [...this.residents.keys()];
  }

  /** The memory the loaded runtimes count together, bytes. */
  usedBytes(): number {
    let n = 0;
    for (const r of this.residents.values()) n += r.bytes();
    return n;
  }

  /**
   * Counts `resident` as loaded, once there is room: idle on-demand runtimes are unloaded, least recently used first,
   * until it fits beside the others (in number and in memory). With none to unload, waits for one to become idle (a
   * request ending) until `signal` aborts, or (with `wait` false: an `always` stack's deploy) refuses at once; either
   * way 503 `insufficient_memory` naming what holds the machine. A model larger than the whole budget is refused at
   * once.
   */
  async admit(resident: Resident, signal: AbortSignal, wait = true): Promise<void> {
    const { maxLoaded, budgetBytes } = this.limits;
    const need = resident.bytes();
    if (budgetBytes > 0 && need > budgetBytes) {
      throw new MakinaError("insufficient_memory", `${resident.name} needs about ${sizeInWords(need)}, more than this machine's whole memory budget (--memory-budget, ${sizeInWords(budgetBytes)}).`);
    }
    for (;;) {
      const others = [...this.residents.values()].filter((r) => r.stackId !== resident.stackId);
      const used = others.reduce((sum, r) => sum + r.bytes(), 0);
      const countFits = maxLoaded === 0 || others.length < maxLoaded;
      const bytesFit = budgetBytes === 0 || used + need <= budgetBytes;
      if (countFits && bytesFit) {
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
        const why = !countFits
          ? `This machine holds ${others.length} loaded runtimes, its limit (--max-loaded ${maxLoaded})`
          : `${resident.name} needs about ${sizeInWords(need)}, and this machine's loaded runtimes use ${sizeInWords(used)} of its ${sizeInWords(budgetBytes)} budget (--memory-budget)`;
        throw new MakinaError("insufficient_memory", `${why}, and none can be unloaded now: ${holders(others)} (serving requests, loading, or always loaded).`, { retryAfterMs: 5000 });
      }
      await this.waiting.next(signal);
    }
  }

  /** Counts `resident` in place of the one of its stack (an on-demand runtime kept as an always one's): no room is made or asked. */
  replace(resident: Resident): void {
    this.residents.set(resident.stackId, resident);
  }

  /** A runtime left the machine (unloaded, failed to load, removed). */
  leave(stackId: string): void {
    if (this.residents.delete(stackId)) this.notify();
  }

  /** Something may have become evictable (a request ended): loads waiting for room look again. */
  notify(): void {
    this.waiting.wake();
  }
}
