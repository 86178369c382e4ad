import { MakinaError, type DeployStep, type StepResult } from "../../proto/index.js";
import type { ModelFacts } from "../compatibility/index.js";
import type { RuntimeKind } from "../store/index.js";

/** What a machine says of a model at a local path: what is there (its facts), or why it cannot be used. */
export type ModelFileVerdict = { usable: true; facts: ModelFacts } | { usable: false; reason: string };

/** Sends a check to the machine, wherever it is linked; undefined when no relay holds its link now. */
export type AskMachine = (machineId: string, step: Extract<DeployStep, { kind: "checkModel" }>, signal: AbortSignal) => Promise<StepResult> | undefined;

/** Options of {@link ModelFiles}. */
export interface ModelFilesOptions {
  /** How long a machine has to answer before the file is left unknown (its first look loads node-llama-cpp there). @default 5000 */
  timeoutMs?: number;
  /** How long an answer is reused (the Forge asks again at every pause in typing). @default 10000 */
  keepMs?: number;
  /** Answers kept at most (the least recently asked go first). @default 1000 */
  maxKept?: number;
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
 * kept a few seconds, and a question asked while the same one is on its way waits for that one.
 */
export class ModelFiles {
  private readonly kept = new Map<string, { verdict: ModelFileVerdict; until: number }>();
  private readonly asking = new Map<string, Promise<ModelFileVerdict | null>>();
  private readonly o: Required<ModelFilesOptions>;

  constructor(
    private readonly ask: AskMachine,
    options: ModelFilesOptions = {},
  ) {
    this.o = { timeoutMs: 5000, keepMs: 10_000, maxKept: 1000, now: Date.now, ...options };
  }

  /** What the machine says of `ref`; null when it cannot be asked now or does not answer in time. */
  async check(machineId: string, runtime: RuntimeKind, ref: string): Promise<ModelFileVerdict | null> {
    const key = `${machineId}\n${runtime}\n${ref}`;
    const kept = this.kept.get(key);
    if (kept && kept.until > this.o.now()) return kept.verdict;
    let pending = this.asking.get(key);
    if (!pending) {
      pending = this.askMachine(machineId, runtime, ref).finally(() => this.asking.delete(key));
      this.asking.set(key, pending);
    }
    const verdict = await pending;
    if (verdict) {
      this.kept.delete(key);
      this.kept.set(key, { verdict, until: this.o.now() + this.o.keepMs });
      if (this.kept.size > this.o.maxKept) this.kept.delete(this.kept.keys().next().value!);
    }
    return verdict;
  }

  private async askMachine(machineId: string, runtime: RuntimeKind, ref: string): Promise<ModelFileVerdict | null> {
    const signal = AbortSignal.timeout(this.o.timeoutMs);
    try {
      const asked = this.ask(machineId, { kind: "checkModel", ref, runtime }, signal);
      if (!asked) return null;
      const r = await asked;
      const weights = r.modelSizeBytes > 0 ? r.modelSizeBytes : null;
      return {
        usable: true,
        facts: { weightsBytes: weights, kvBytesPerToken: r.kvBytesPerToken || null, trainContextSize: r.trainContextSize || null, source: weights === null ? "unknown" : "machine" },
      };
    } catch (err) {
      const e = MakinaError.from(err);
      // The machine's own answer: nothing there, or not what the runtime loads. Anything else leaves it unknown.
      return e.code === "not_found" || e.code === "invalid_value" ? { usable: false, reason: e.message } : null;
    }
  }
}
