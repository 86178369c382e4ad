import { stat } from "node:fs/promises";
import { EMPTY_STEP_RESULT, ggufFacts, MakinaError, type StepResult } from "../../proto/index.js";
import { parseModelRef } from "./model-ref.js";

/**
 * Whether this machine has the model a stack would name at a local path, and what its header says (for a GGUF
 * file): what the relay's compatibility panel asks before a stack is made, so a path that is not here is said at
 * once rather than when its deploy fails. Nothing is hashed or pulled. Refuses (`not_found`) a path with nothing,
 * and (`invalid_value`) a directory or a file that is not GGUF where the GGUF runtime needs a GGUF file.
 */
export async function checkModelFile(ref: string, runtime: string, signal?: AbortSignal): Promise<StepResult> {
  const source = parseModelRef(ref);
  if (source.kind !== "file") throw new MakinaError("invalid_value", `${ref} is not a path on this machine.`, { param: "model" });
  const info = await stat(source.path).catch(() => undefined);
  if (!info) throw new MakinaError("not_found", `There is no file at ${source.path} on this machine.`, { param: "model" });
  if (runtime !== "gguf") return { ...EMPTY_STEP_RESULT, modelPath: source.path, modelSizeBytes: info.isFile() ? info.size : 0 };
  if (!info.isFile()) throw new MakinaError("invalid_value", `${source.path} is a directory on this machine; the GGUF runtime needs a .gguf file.`, { param: "model" });
  const { readGgufFileInfo } = await import("node-llama-cpp");
  let facts;
  try {
    facts = await ggufFacts(await readGgufFileInfo(source.path, { sourceType: "filesystem", logWarnings: false, signal }));
  } catch (err) {
    signal?.throwIfAborted();
    throw new MakinaError("invalid_value", `${source.path} on this machine is not a GGUF model the runtime can read: ${err instanceof Error ? err.message : String(err)}`.slice(0, 300), { param: "model" });
  }
  return { ...EMPTY_STEP_RESULT, modelPath: source.path, modelSizeBytes: info.size, kvBytesPerToken: facts.kvBytesPerToken, trainContextSize: facts.trainContextSize ?? 0 };
}
