import { TIER_RANK, type ServiceTier } from "./service-tier.js";

/** One item waiting in a {@link FairQueue}: kept by whoever pushed it, to take it out early. */
export interface QueueEntry<T> {
  readonly item: T;
  /** The tier it asked for. */
  readonly tier: ServiceTier;
  /** Whose turn it takes (a key's id). */
  readonly owner: string;
  /** When it came (`performance.now()`), for its ageing and for the order between queues. */
  readonly since: number;
  /** The place it is ranked at now: its tier's, or a better one once it has waited. */
  rank: number;
  /** False once it has left the queue. */
  queued: boolean;
}

/**
 * Items waiting their turn, ordered by service tier, fair between owners, and aged:
 * - the best rank goes first (`priority` 0, `default` 1, `flex` 2);
 * - within a rank, owners take turns (each owner with items waiting at that rank is a place in a ring; the one
 *   served goes to the ring's end), and an owner's items go in the order they came: an owner with 1,000 waiting
 *   delays one with 1 by one turn at most;
 * - an item is ranked one better for each `agingMs` it has waited, so a `flex` item waits as a `priority` one
 *   after 2 × `agingMs`: from then on it is served within one turn of each owner waiting at that rank.
 * Cost: pushing is O(1); looking for the next (or taking it) is O(items waiting): the ageing looks at each one
 * (a stack's queue holds at most `MAKINA_MAX_QUEUE_PER_STACK`, a model's at most what the relay lets through).
 */
export class FairQueue<T> {
  /** By rank: owner → its items at that rank, oldest first. A Map's order is the ring's. */
  private readonly ranks: Map<string, QueueEntry<T>[]>[] = [new Map(), new Map(), new Map()];
  size = 0;

  constructor(private readonly agingMs: number) {}

  push(item: T, tier: ServiceTier, owner: string, now = performance.now()): QueueEntry<T> {
    const entry: QueueEntry<T> = { item, tier, owner, since: now, rank: TIER_RANK[tier], queued: true };
    const ring = this.ranks[entry.rank]!;
    const line = ring.get(owner);
    if (line) line.push(entry);
    else ring.set(owner, [entry]);
    this.size++;
    return entry;
  }

  /** Takes an entry out before its turn (its wait ended); false when it had left already. */
  remove(entry: QueueEntry<T>): boolean {
    if (!entry.queued) return false;
    const ring = this.ranks[entry.rank]!;
    const line = ring.get(entry.owner)!;
    line.splice(line.indexOf(entry), 1);
    if (line.length === 0) ring.delete(entry.owner);
    entry.queued = false;
    this.size--;
    return true;
  }

  /**
   * The entry whose turn is next (ranked as of `now`), left in the queue; undefined when none waits. With
   * `eligible`, the first in that order that it allows (one that may not go now keeps its place).
   */
  peek(now = performance.now(), eligible?: (entry: QueueEntry<T>) => boolean): QueueEntry<T> | undefined {
    if (this.size === 0) return undefined;
    this.age(now);
    for (const ring of this.ranks) {
      for (const line of ring.values()) {
        if (!eligible) return line[0];
        for (const entry of line) if (eligible(entry)) return entry;
      }
    }
    return undefined;
  }

  /** Takes the entry whose turn is next (the one {@link peek} names) and moves its owner to the end of the ring. */
  shift(now = performance.now(), eligible?: (entry: QueueEntry<T>) => boolean): QueueEntry<T> | undefined {
    const entry = this.peek(now, eligible);
    if (!entry) return undefined;
    const ring = this.ranks[entry.rank]!;
    const line = ring.get(entry.owner)!;
    line.splice(line.indexOf(entry), 1);
    ring.delete(entry.owner);
    if (line.length) ring.set(entry.owner, line);
    entry.queued = false;
    this.size--;
    return entry;
  }

  /**
   * The newest entry of the worst tier below `tier` (what a `tier` item displaces from a full queue), or
   * undefined when every entry is of `tier` or better.
   */
  newestBelow(tier: ServiceTier): QueueEntry<T> | undefined {
    let found: QueueEntry<T> | undefined;
    for (const ring of this.ranks) {
      for (const line of ring.values()) {
        for (const e of line) {
          if (TIER_RANK[e.tier] <= TIER_RANK[tier]) continue;
          if (!found || TIER_RANK[e.tier] > TIER_RANK[found.tier] || (e.tier === found.tier && e.since > found.since)) found = e;
        }
      }
    }
    return found;
  }

  /**
   * Ranks each item that has waited long enough one better per `agingMs` waited. Every item of a line is looked
   * at: a line at a rank may hold an owner's items of two tiers (its own, and older ones aged into it), which
   * earn their next rank at different times.
   */
  private age(now: number): void {
    for (let rank = this.ranks.length - 1; rank > 0; rank--) {
      const ring = this.ranks[rank]!;
      for (const [owner, line] of ring) {
        let kept = 0;
        for (const entry of line) {
          const earned = Math.max(0, TIER_RANK[entry.tier] - Math.floor((now - entry.since) / this.agingMs));
          if (earned >= rank) line[kept++] = entry;
          else {
            entry.rank = earned;
            this.insertByAge(this.ranks[earned]!, owner, entry);
          }
        }
        line.length = kept;
        if (kept === 0) ring.delete(owner);
      }
    }
  }

  /** Puts an aged entry in its owner's line at a better rank, in the order the owner's items came. */
  private insertByAge(ring: Map<string, QueueEntry<T>[]>, owner: string, entry: QueueEntry<T>): void {
    const line = ring.get(owner);
    if (!line) {
      ring.set(owner, [entry]);
      return;
    }
    let i = line.length;
    while (i > 0 && line[i - 1]!.since > entry.since) i--;
    line.splice(i, 0, entry);
  }
}
