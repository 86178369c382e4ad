import { TurnBatcher } from "./turn-batcher.js";

/** One write of a {@link BatchWriter}: its kind (writes of one kind share a statement) and the row it writes. */
export interface BatchedWrite {
  kind: string;
  key: string;
}

/**
 * Writes many rows in one statement when many writes are asked for at once, each row's writes in the order
 * they were asked. A write asked for while none is running goes on the next turn of the event loop (with every
 * write asked for in that turn); writes asked for while a batch is running go together in the next one.
 *
 * A batch is written in waves: a write goes in the wave after the last one holding a write of its row, so a
 * row's writes land in order (a machine marked online and then offline is offline) while writes of different
 * rows, independent of each other, share a wave whatever their order. Each wave is one statement per kind. A
 * write of a row whose last write was of the same kind replaces it (they set the same columns).
 *
 * A failed statement fails the writes in it (every row of its kind in its wave); the other statements go on.
 */
export class BatchWriter<W extends BatchedWrite> extends TurnBatcher {
  private queued: { write: W; resolve: () => void; reject: (err: unknown) => void }[] = [];

  constructor(
    /** Writes at least one write, all of one kind, no row twice, in one statement. */
    private readonly writeRows: (run: W[]) => Promise<void>,
    private readonly maxBatch = 500,
  ) {
    super();
  }

  private readonly unsettled = new Set<Promise<void>>();

  /** Resolves once the write is committed. */
  write(write: W): Promise<void> {
    const written = new Promise<void>((resolve, reject) => {
      this.queued.push({ write, resolve, reject });
      this.schedule();
    });
    this.unsettled.add(written);
    const done = () => void this.unsettled.delete(written);
    written.then(done, done);
    return written;
  }

  /** Resolves once every write asked for so far is written or failed (before the database closes). */
  async drain(): Promise<void> {
    await Promise.allSettled([...this.unsettled]);
  }

  protected get pending(): boolean {
    return this.queued.length > 0;
  }

  protected async runBatch(): Promise<void> {
    const batch = this.queued.splice(0, this.maxBatch);
    type Queued = (typeof batch)[number];
    // Each wave: its writes by kind, by row.
    const waves: Map<string, Map<string, { write: W; waiting: Queued[] }>>[] = [];
    const lastOfRow = new Map<string, { wave: number; kind: string }>();
    for (const queued of batch) {
      const { kind, key } = queued.write;
      const last = lastOfRow.get(key);
      if (last?.kind === kind) {
        const entry = waves[last.wave]!.get(kind)!.get(key)!;
        entry.write = queued.write;
        entry.waiting.push(queued);
        continue;
      }
      const wave = last ? last.wave + 1 : 0;
      lastOfRow.set(key, { wave, kind });
      const kinds = (waves[wave] ??= new Map());
      let rows = kinds.get(kind);
      if (!rows) kinds.set(kind, (rows = new Map()));
      rows.set(key, { write: queued.write, waiting: [queued] });
    }
    for (const kinds of waves) {
      for (const rows of kinds.values()) {
        const entries = [...rows.values()];
        try {
          await this.writeRows(entries.map((e) => e.write));
          for (const e of entries) for (const w of e.waiting) w.resolve();
        } catch (err) {
          for (const e of entries) for (const w of e.waiting) w.reject(err);
        }
      }
    }
  }
}
