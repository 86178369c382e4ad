import { DEFAULT_REFINE_ROUNDS, type LayerOptionValue } from "../../proto/index.js";
import { stoppedBy, type ChatInput, type ChatOptions, type ModelRuntime, type RuntimeEvent } from "../runtimes/model-runtime.js";
import { OrchestratedSteps, refuseTools } from "./orchestrator-steps.js";
import { RuntimeLayer } from "./runtime-layer.js";

const CRITIQUE = "Critique your answer above: list its errors, omissions and unclear parts, briefly. Do not rewrite it.";
const REVISE = "Write an improved answer to the original request that heeds this critique of your answer above. Reply with the answer only.";

/**
 * The `refine` orchestrator: the model drafts an answer, critiques it, and revises it in the light of the
 * critique, for a configured number of rounds. The client sees one answer, the last revision, streamed as
 * it is written; the usage is every step's. Each step runs under the request's signal, so canceling it stops
 * the step running and starts no other.
 */
export class RefineOrchestrator extends RuntimeLayer {
  private readonly rounds: number;
  private readonly critiquePrompt: string;
  private readonly revisePrompt: string;

  constructor(runtime: ModelRuntime, options: Record<string, LayerOptionValue>) {
    super(runtime);
    this.rounds = typeof options.rounds === "number" ? options.rounds : DEFAULT_REFINE_ROUNDS;
    this.critiquePrompt = typeof options.critique_prompt === "string" ? options.critique_prompt : CRITIQUE;
    this.revisePrompt = typeof options.revise_prompt === "string" ? options.revise_prompt : REVISE;
  }

  async *chat(input: ChatInput, options: ChatOptions = {}): AsyncGenerator<RuntimeEvent> {
    refuseTools(input, "refine");
    const steps = new OrchestratedSteps(this.runtime, options);
    // Steps before the last are read whole, not streamed: the runtime is asked for the whole answer.
    const inner = { ...input, stream: false };
    try {
      let draft = (await steps.collect(inner)).text;
      for (let round = 1; ; round++) {
        const critique = await steps.collect({
          ...inner,
          // The critique is prose about the draft, whatever shape the answer must have.
          responseFormat: undefined,
          messages: [...input.messages, { role: "assistant", content: draft }, { role: "user", content: this.critiquePrompt }],
        });
        const revise = { ...input, messages: [...input.messages, { role: "assistant", content: draft }, { role: "user", content: `${this.revisePrompt}\n\nCritique:\n${critique.text}` }] };
        if (round >= this.rounds) {
          yield* steps.stream(revise);
          return;
        }
        draft = (await steps.collect({ ...revise, stream: false })).text;
      }
    } catch (err) {
      // A step canceled or failed: the request ends with every step's tokens.
      yield stoppedBy(err, steps.usage, options.signal);
    }
  }
}
