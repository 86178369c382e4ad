import { MakinaError, type FinishReason } from "../../proto/index.js";
import type { ChatInput, ChatOptions, ModelRuntime, RuntimeEvent, TokenUsage } from "../runtimes/model-runtime.js";

/** What one step of an orchestrator produced: its text (and the pieces it came in), why it ended, what it used. */
export interface StepResult {
  text: string;
  pieces: string[];
  finishReason: FinishReason;
}

/**
 * The steps of one orchestrated request, and their usage: each step's tokens are counted as the runtime
 * reports them, and the request's usage (`options.usage`, read when it is canceled or fails midway) is
 * always the sum of every step so far, so each is charged.
 */
export class OrchestratedSteps {
  private readonly usages: TokenUsage[] = [];

  constructor(
    private readonly runtime: ModelRuntime,
    private readonly options: ChatOptions,
  ) {}

  /** Every step's tokens so far, summed. */
  get usage(): TokenUsage {
    let promptTokens = 0;
    let completionTokens = 0;
    for (const u of this.usages) {
      promptTokens += u.promptTokens;
      completionTokens += u.completionTokens;
    }
    return { promptTokens, completionTokens };
  }

  /** Runs a step to its end, collecting its text. */
  async collect(input: ChatInput, signal = this.options.signal): Promise<StepResult> {
    const result: StepResult = { text: "", pieces: [], finishReason: "stop" };
    for await (const ev of this.stream(input, signal)) {
      if (ev.type === "text") {
        result.pieces.push(ev.text);
        result.text += ev.text;
      } else if (ev.type === "end") result.finishReason = ev.finishReason;
    }
    return result;
  }

  /** Runs a step, yielding its text as it comes (the final step of a streamed request); its `end` carries every step's usage. */
  async *stream(input: ChatInput, signal = this.options.signal): AsyncGenerator<RuntimeEvent> {
    const usage: TokenUsage = { promptTokens: 0, completionTokens: 0 };
    this.usages.push(usage);
    try {
      for await (const ev of this.runtime.chat(input, { signal, usage })) {
        if (ev.type === "end") {
          Object.assign(usage, ev.usage);
          yield { ...ev, usage: this.usage };
        } else {
          this.report();
          yield ev;
        }
      }
    } catch (err) {
      // However the runtime reports it, a step stopped by the request's end is a canceled request.
      if (signal?.aborted) throw MakinaError.from(signal.reason);
      throw err;
    } finally {
      this.report();
    }
  }

  /** Keeps the request's usage the sum of its steps. */
  private report(): void {
    if (this.options.usage) Object.assign(this.options.usage, this.usage);
  }
}

/** Orchestrators run the model several times for one answer: tools belong to one call, and are refused. */
export function refuseTools(input: ChatInput, orchestrator: string): void {
  if (input.tools?.length) {
    throw new MakinaError("unsupported_parameter", `A stack with the ${orchestrator} orchestrator does not take tools: its answer comes from several runs of the model.`, { param: "tools" });
  }
}
