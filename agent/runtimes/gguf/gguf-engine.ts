import { getLlama, LlamaLogLevel, type Llama } from "node-llama-cpp";
import type { Logger } from "../../../proto/index.js";

/** Options of {@link createLlama}. */
export interface LlamaOptions {
  /** Thread budget shared by every model this agent loads. */
  threads: number;
  gpu: "auto" | false;
  log: Logger;
}

/**
 * Loads llama.cpp's bindings once per agent. Uses only the prebuilt binaries
 * shipped in npm packages (never builds or downloads at run time); `maxThreads`
 * caps the threads of all contexts together so the machine is never oversubscribed.
 */
export async function createLlama(options: LlamaOptions): Promise<Llama> {
  return getLlama({
    gpu: options.gpu,
    build: "never",
    maxThreads: options.threads,
    logLevel: LlamaLogLevel.warn,
    logger: (level, message) => {
      const text = message.trim();
      if (!text) return;
      if (level === LlamaLogLevel.error || level === LlamaLogLevel.fatal) options.log.error(text);
      else options.log.debug(text);
    },
  });
}
