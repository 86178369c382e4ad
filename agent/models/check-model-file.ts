import { stat } from "node:fs/promises";
import { EMPTY_STEP_RESULT, ggufFacts, MakinaError, type Logger, type StepResult } from "../../proto/index.js";
import { parseModelRef } from "./model-ref.js";
import { partsOnDisk } from "./parts-on-disk.js";

/**
 * Whether this machine has the model a stack would name at a local path, and what its header says (for a GGUF
 * file): what the relay's compatibility panel asks (for an admin) before a stack is made, so a path that is not
 * here is said at once rather than when its deploy fails. Nothing is hashed or pulled. Says as little of the disk
 * as the question needs: whether something is there; for the GGUF runtime, only of a `.gguf` file, its size and
 * header. Refuses (`not_found`) a path with nothing, and (`invalid_value`) what the GGUF runtime cannot load, in
 * fixed words: what the file held, or why it could not be read, goes to this machine's log.
 */
export async function checkModelFile(ref: string, runtime: string, log: Logger, signal?: AbortSignal): Promise<StepResult> {
  const source = parseModelRef(ref);
  if (source.kind !== "file") throw new MakinaError("invalid_value", `${ref} is not a path on this machine.`, { param: "model" });
  if (runtime === "gguf" && !/\.gguf$/i.test(source.path)) throw new MakinaError("invalid_value", "The GGUF runtime needs a .gguf file.", { param: "model" });
  const info = await stat(source.path).catch(() => undefined);
  if (!info) throw new MakinaError("not_found", `There is no file at ${source.path} on this machine.`, { param: "model" });
  // vLLM and MLX load a directory or a repository the runtime reads itself: that it is there is all there is to say.
  if (runtime !== "gguf") return { ...EMPTY_STEP_RESULT, modelPath: source.path };
  if (!info.isFile()) throw new MakinaError("invalid_value", `${source.path} is a directory on this machine; the GGUF runtime needs a .gguf file.`, { param: "model" });
  const { readGgufFileInfo } = await import("node-llama-cpp");
  let facts;
  try {
    facts = await ggufFacts(await readGgufFileInfo(source.path, { sourceType: "filesystem", logWarnings: false, signal }));
  } catch (err) {
    signal?.throwIfAborted();
    log.info("a model file the relay asked about cannot be read as GGUF", { path: source.path, err });
    throw new MakinaError("invalid_value", `${source.path} on this machine is not a GGUF model the runtime can read.`, { param: "model" });
  }
  // A split model's size is all its parts' (llama.cpp loads them beside its first).
  const size = (await partsOnDisk(source.path)).reduce((n, p) => n + p.size, 0);
  return { ...EMPTY_STEP_RESULT, modelPath: source.path, modelSizeBytes: size, kvBytesPerToken: facts.kvBytesPerToken, trainContextSize: facts.trainContextSize ?? 0, embeddingModel: facts.embeddingModel, rankingModel: facts.rankingModel };
}
