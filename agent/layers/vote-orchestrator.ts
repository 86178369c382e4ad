import { DEFAULT_VOTE_SAMPLES, MakinaError, type LayerOptionValue } from "../../proto/index.js";
import { stoppedBy, type ChatInput, type ChatOptions, type ModelRuntime, type RuntimeEvent } from "../runtimes/model-runtime.js";
import { OrchestratedSteps, refuseTools, type StepResult } from "./orchestrator-steps.js";
import { RuntimeLayer } from "./runtime-layer.js";

/** The samples' temperature when neither the request nor the options set one: varied enough to disagree. */
const DEFAULT_TEMPERATURE = 0.8;

/**
 * The `vote` orchestrator (self-consistency): the model answers the request several times at once, and the
 * answer most consistent with the others wins: the one given most often (compared without case and spacing),
 * else the one sharing most words with the rest. The client sees that answer, in the pieces it was written
 * in; the usage is every sample's. All samples run under one signal: canceling the request, or one sample
 * failing, stops every one.
 */
export class VoteOrchestrator extends RuntimeLayer {
  private readonly samples: number;
  private readonly temperature: number;

  constructor(runtime: ModelRuntime, options: Record<string, LayerOptionValue>) {
    super(runtime);
    this.samples = typeof options.samples === "number" ? options.samples : DEFAULT_VOTE_SAMPLES;
    this.temperature = typeof options.temperature === "number" ? options.temperature : DEFAULT_TEMPERATURE;
  }

  async *chat(input: ChatInput, options: ChatOptions = {}): AsyncGenerator<RuntimeEvent> {
    refuseTools(input, "vote");
    const steps = new OrchestratedSteps(this.runtime, options);
    const all = new AbortController();
    const stop = () => all.abort(options.signal?.reason);
    options.signal?.addEventListener("abort", stop, { once: true });
    const sample = (i: number): ChatInput => ({
      ...input,
      stream: false,
      temperature: input.unset?.includes("temperature") ? this.temperature : input.temperature,
      // A seeded request stays reproducible: each sample has its own seed, derived from it.
      seed: input.seed === undefined ? undefined : (input.seed + i) >>> 0,
    });
    let results: StepResult[];
    try {
      // One sample failing stops the others; each is waited for, so that what every one used is counted.
      const settled = await Promise.allSettled(
        Array.from({ length: this.samples }, (_, i) =>
          steps.collect(sample(i), all.signal).catch((err: unknown) => {
            all.abort(err);
            throw err;
          }),
        ),
      );
      const failed = settled.find((r) => r.status === "rejected");
      if (failed) throw failed.reason;
      results = settled.map((r) => (r as PromiseFulfilledResult<StepResult>).value);
    } catch (err) {
      yield stoppedBy(all.signal.reason ?? err, steps.usage, options.signal);
      return;
    } finally {
      options.signal?.removeEventListener("abort", stop);
    }
    const winner = results[mostConsistent(results.map((r) => r.text))]!;
    for (const text of winner.pieces) yield { type: "text", text };
    yield { type: "end", finishReason: winner.finishReason, usage: steps.usage };
  }
}

/** How answers are compared: without case, and with runs of spaces as one. */
function normalized(text: string): string {
  return text.trim().toLowerCase().replace(/\s+/g, " ");
}

/**
 * The index of the answer most consistent with the others: the most frequent one, ties (and all-different
 * answers) broken by the greatest mean word overlap (Jaccard) with the others, then by order.
 */
export function mostConsistent(answers: string[]): number {
  const keys = answers.map(normalized);
  const count = new Map<string, number>();
  for (const k of keys) count.set(k, (count.get(k) ?? 0) + 1);
  const words = keys.map((k) => new Set(k.split(" ").filter(Boolean)));
  const overlap = (a: Set<string>, b: Set<string>) => {
    if (a.size === 0 && b.size === 0) return 1;
    let shared = 0;
    for (const w of a) if (b.has(w)) shared++;
    return shared / (a.size + b.size - shared);
  };
  let best = 0;
  let bestScore = [-1, -1];
  for (let i = 0; i < answers.length; i++) {
    let sum = 0;
    for (let j = 0; j < answers.length; j++) if (j !== i) sum += overlap(words[i]!, words[j]!);
    const score = [count.get(keys[i]!)!, sum];
    if (score[0]! > bestScore[0]! || (score[0] === bestScore[0] && score[1]! > bestScore[1]!)) {
      best = i;
      bestScore = score;
    }
  }
  return best;
}
