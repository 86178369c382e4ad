/**
 * Answers kept until they expire, at most `most` of them, the least recently asked forgotten first. Used where
 * the relay reads something slow on someone's behalf and many ask the same: GGUF headers, the model hub's answers.
 */
export class KeptAnswers<V> {
  private readonly kept = new Map<string, { value: V; until: number }>();

  constructor(private readonly most: number) {}

  /** The answer kept for `key` while it has not expired at `now` (and it becomes the most recently asked). */
  get(key: string, now: number): V | undefined {
    const k = this.kept.get(key);
    if (!k || k.until <= now) return undefined;
    this.kept.delete(key);
    this.kept.set(key, k);
    return k.value;
  }

  /** The answer kept for `key` whatever its expiry (what is known without reading again). */
  peek(key: string): V | undefined {
    return this.kept.get(key)?.value;
  }

  set(key: string, value: V, until: number): void {
    this.kept.delete(key);
    this.kept.set(key, { value, until });
    while (this.kept.size > this.most) this.kept.delete(this.kept.keys().next().value!);
  }
}

/** At most `most` of something a minute for each of several callers (an organization's reads): the minute of the clock. */
export class MinuteQuota {
  private readonly counts = new Map<string, { minute: number; count: number }>();

  constructor(private readonly most: number) {}

  /** Counts one for `caller` in `now`'s minute; false (nothing counted) when it has used its `most` already. */
  take(caller: string, now: number): boolean {
    const minute = Math.floor(now / 60_000);
    for (const [id, c] of this.counts) if (c.minute !== minute) this.counts.delete(id);
    const c = this.counts.get(caller) ?? { minute, count: 0 };
    if (c.count >= this.most) return false;
    c.count++;
    this.counts.set(caller, c);
    return true;
  }
}
