import { MakinaError, type DeployStep, type StepResult } from "../../proto/index.js";
import type { ModelFacts } from "../compatibility/index.js";
import type { RuntimeKind } from "../store/index.js";

/** What a machine says of a model at a local path: what is there (its facts), or why it cannot be used. */
export type ModelFileVerdict = { usable: true; facts: ModelFacts } | { usable: false; reason: string };

/** Sends a check to the machine, wherever it is linked; `machine_offline` when no relay holds its link now. */
export type AskMachine = (machineId: string, step: Extract<DeployStep, { kind: "checkModel" }>, signal: AbortSignal) => Promise<StepResult>;

/** Options of {@link ModelFiles}. */
export interface ModelFilesOptions {
  /** How long a machine has to answer before the file is left unknown (its first look loads node-llama-cpp there). @default 5000 */
  timeoutMs?: number;
  /** How long an answer is reused (the Forge asks again at every pause in typing). @default 10000 */
  keepMs?: number;
  /** Answers kept at most (the least recently asked go first). @default 1000 */
  maxKept?: number;
  /** Looks on one machine at once at most; past them a file is left unknown. @default 4 */
  perMachine?: number;
  now?: () => number;
}

/** Whether a model reference names a file or directory on the machine (not a download, a hub id or a server's model name). */
export function isLocalModel(runtime: RuntimeKind, ref: string): boolean {
  if (runtime === "openai" || ref.trim() === "") return false;
  if (ref.startsWith("hf:") || /^https?:\/\//i.test(ref)) return false;
  // vLLM and MLX take `owner/repo` as a hub id; a path says it is one.
  return runtime === "gguf" || /^(\/|~|\.\.?\/|[A-Za-z]:[\\/])/.test(ref);
}

/**
 * Asks machines whether they have the model files stacks would name by a local path, and what their headers say,
 * so a path that is not there fails the compatibility check (the Forge's panel, stack create) instead of the
 * deploy. A machine that does not answer in time (offline, an older agent) leaves the file unknown. Answers are
 * kept a few seconds for the panel (a machine that did not answer in time too, so an older agent costs one wait,
 * not one per keystroke), while a stack's create, edit or deploy asks afresh; a question asked while the same one
 * is on its way waits for that one; a machine is asked a few things at once at most.
 */
export class ModelFiles {
  private readonly kept = new Map<string, { verdict: ModelFileVerdict | null; until: number }>();
  /** The facts each machine last gave of a file, kept (the newest {@link ModelFilesOptions.maxKept}) for as long as the relay runs. */
  private readonly seen = new Map<string, ModelFacts>();
  private readonly asking = new Map<string, Promise<{ verdict: ModelFileVerdict | null; keep: boolean }>>();
  private readonly busy = new Map<string, number>();
  private readonly o: Required<ModelFilesOptions>;

  constructor(
    private readonly ask: AskMachine,
    options: ModelFilesOptions = {},
  ) {
    this.o = { timeoutMs: 5000, keepMs: 10_000, maxKept: 1000, perMachine: 4, now: Date.now, ...options };
  }

  /**
   * What the machine says of `ref`; null when it cannot be asked now or does not answer in time. `fresh`: not an
   * answer kept from before (a stack is about to be made or deployed on it).
   */
  async check(machineId: string, runtime: RuntimeKind, ref: string, { fresh = false }: { fresh?: boolean } = {}): Promise<ModelFileVerdict | null> {
    const key = `${machineId}\n${runtime}\n${ref}`;
    const kept = this.kept.get(key);
    if (kept && kept.until > this.o.now() && !fresh) return kept.verdict;
    let pending = this.asking.get(key);
    if (!pending) {
      if ((this.busy.get(machineId) ?? 0) >= this.o.perMachine) return null;
      this.busy.set(machineId, (this.busy.get(machineId) ?? 0) + 1);
      pending = this.askMachine(machineId, runtime, ref).finally(() => {
        this.asking.delete(key);
        const left = (this.busy.get(machineId) ?? 1) - 1;
        if (left > 0) this.busy.set(machineId, left);
        else this.busy.delete(machineId);
      });
      this.asking.set(key, pending);
    }
    const answer = await pending;
    if (answer.verdict?.usable) {
      this.seen.delete(key);
      this.seen.set(key, answer.verdict.facts);
      if (this.seen.size > this.o.maxKept) this.seen.delete(this.seen.keys().next().value!);
    }
    if (answer.keep) {
      this.kept.delete(key);
      this.kept.set(key, { verdict: answer.verdict, until: this.o.now() + this.o.keepMs });
      if (this.kept.size > this.o.maxKept) this.kept.delete(this.kept.keys().next().value!);
    }
    return answer.verdict;
  }

  /**
   * What the machine said of `ref` when last asked (its size, its KV cache per token, its trained context), without
   * asking it: what a stack's page estimates with, as the Forge did when it was made. Undefined when never asked.
   */
  lastFacts(machineId: string, runtime: RuntimeKind, ref: string): ModelFacts | undefined {
    return this.seen.get(`${machineId}\n${runtime}\n${ref}`);
  }

  /** The machine's answer, and whether to keep it: its own answer, or its silence (not a link that is not there). */
  private async askMachine(machineId: string, runtime: RuntimeKind, ref: string): Promise<{ verdict: ModelFileVerdict | null; keep: boolean }> {
    const signal = AbortSignal.timeout(this.o.timeoutMs);
    try {
      const r = await this.ask(machineId, { kind: "checkModel", ref, runtime }, signal);
      const weights = r.modelSizeBytes > 0 ? r.modelSizeBytes : null;
      return {
        verdict: {
          usable: true,
          facts: { weightsBytes: weights, kvBytesPerToken: r.kvBytesPerToken || null, trainContextSize: r.trainContextSize || null, embeddingModel: r.embeddingModel, rankingModel: r.rankingModel, source: weights === null ? "unknown" : "machine" },
        },
        keep: true,
      };
    } catch (err) {
      const e = MakinaError.from(err);
      // The machine's own answer: nothing there, or not what the runtime loads. Its silence leaves it unknown a while.
      if (e.code === "not_found" || e.code === "invalid_value") return { verdict: { usable: false, reason: e.message }, keep: true };
      return { verdict: null, keep: e.code === "timeout" || signal.aborted };
    }
  }
}
