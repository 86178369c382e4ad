import { MakinaError } from "../../../proto/index.js";
import { stoppedBy, type RuntimeEvent } from "../model-runtime.js";
import type { ModelWork } from "./model-work.js";

/**
 * A context of its own beside a model's chat context (its embedding or ranking context): made on the first request
 * that needs it (one that could not be made is tried again by the next), taken by its requests one after another
 * ({@link each}), disposed with the model.
 */
export class SideContext<C extends { dispose(): Promise<void> }> {
  private made: Promise<C> | undefined;
  private turn: Promise<void> = Promise.resolve();

  constructor(
    private readonly work: ModelWork,
    private readonly create: () => Promise<C>,
    /** What the context is for, in a refusal: "embedding", "ranking". */
    private readonly purpose: string,
  ) {}

  /** The context, made now unless it was; refused with `runtime_unavailable` when it cannot be made. */
  get(): Promise<C> {
    this.made ??= this.work.use(this.create).catch((err: unknown) => {
      this.made = undefined;
      this.work.check();
      throw new MakinaError("runtime_unavailable", `The model's ${this.purpose} context could not be made (too little memory?).`, { cause: err, retryAfterMs: 5000 });
    });
    return this.made;
  }

  /**
   * A request's items in its turn on the context: one event each (`event` makes it), so the reader's pace and a
   * cancellation hold between items, then `end` with `promptTokens`. A failure or a cancellation ends it `stopped`,
   * every item counted once the model began them.
   */
  async *each<T>(items: readonly T[], signal: AbortSignal, promptTokens: number, event: (item: T, index: number) => Promise<RuntimeEvent>): AsyncGenerator<RuntimeEvent> {
    const done = await this.take();
    try {
      for (const [index, item] of items.entries()) {
        if (signal.aborted) throw MakinaError.from(signal.reason);
        yield await this.work.use(() => event(item, index));
      }
    } catch (err) {
      yield stoppedBy(err, { promptTokens, completionTokens: 0 }, signal);
      return;
    } finally {
      done();
    }
    yield { type: "end", finishReason: "stop", usage: { promptTokens, completionTokens: 0 } };
  }

  /** Waits for the requests before this one to be done with the context; call the function returned when done. */
  private async take(): Promise<() => void> {
    const previous = this.turn;
    let done!: () => void;
    this.turn = new Promise((resolve) => (done = resolve));
    await previous;
    return done;
  }

  /** Disposes the context, if one was made. */
  async dispose(): Promise<void> {
    await this.made?.then((c) => c.dispose()).catch(() => undefined);
  }
}
