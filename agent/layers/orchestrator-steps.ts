import { MakinaError, type FinishReason, type Usage } from "../../proto/index.js";
import { stoppedBy, type ChatInput, type ChatOptions, type ModelRuntime, type RuntimeEvent } from "../runtimes/model-runtime.js";

/** What one step of an orchestrator produced: its text (and the pieces it came in), why it ended, what it used. */
export interface StepResult {
  text: string;
  pieces: string[];
  finishReason: FinishReason;
}

/**
 * The steps of one orchestrated request, and their usage: each step's tokens are what its runtime's last event
 * (`end`, or `stopped` when it was canceled or failed) said, and the request's usage is the sum of every step
 * so far, so each is charged.
 */
export class OrchestratedSteps {
  private readonly usages: Usage[] = [];

  constructor(
    private readonly runtime: ModelRuntime,
    private readonly options: ChatOptions,
  ) {}

  /** Every step's tokens so far, summed. */
  get usage(): Usage {
    let promptTokens = 0;
    let completionTokens = 0;
    for (const u of this.usages) {
      promptTokens += u.promptTokens;
      completionTokens += u.completionTokens;
    }
    return { promptTokens, completionTokens };
  }

  /** Runs a step to its end, collecting its text; a step canceled or failed throws its error (its usage counted). */
  async collect(input: ChatInput, signal = this.options.signal): Promise<StepResult> {
    const result: StepResult = { text: "", pieces: [], finishReason: "stop" };
    for await (const ev of this.stream(input, signal)) {
      if (ev.type === "text") {
        result.pieces.push(ev.text);
        result.text += ev.text;
      } else if (ev.type === "end") result.finishReason = ev.finishReason;
      else if (ev.type === "stopped") throw ev.error;
    }
    return result;
  }

  /** Runs a step, yielding its text as it comes (the final step of a streamed request); its last event carries every step's usage. */
  async *stream(input: ChatInput, signal = this.options.signal): AsyncGenerator<RuntimeEvent> {
    const usage: Usage = { promptTokens: 0, completionTokens: 0 };
    this.usages.push(usage);
    for await (const ev of this.runtime.chat(input, { signal })) {
      if (ev.type === "end") {
        Object.assign(usage, ev.usage);
        yield { ...ev, usage: this.usage };
        return;
      }
      if (ev.type === "stopped") {
        Object.assign(usage, ev.usage);
        // However the runtime reports it, a step stopped by the request's end is a canceled request.
        yield stoppedBy(ev.error, this.usage, signal);
        return;
      }
      yield ev;
    }
  }
}

/** Orchestrators run the model several times for one answer: tools belong to one call, and are refused. */
export function refuseTools(input: ChatInput, orchestrator: string): void {
  if (input.tools?.length) {
    throw new MakinaError("unsupported_parameter", `A stack with the ${orchestrator} orchestrator does not take tools: its answer comes from several runs of the model.`, { param: "tools" });
  }
}
