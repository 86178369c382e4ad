import type { ChatInput, ChatOptions, ModelRuntime, RuntimeEvent } from "../runtimes/model-runtime.js";

/** A layer in front of a runtime: it serves as the runtime does (context, endpoint, process, close), and answers in its own way. */
export abstract class RuntimeLayer implements ModelRuntime {
  constructor(protected readonly runtime: ModelRuntime) {}

  get contextSize(): number {
    return this.runtime.contextSize;
  }

  get endpoint(): string {
    return this.runtime.endpoint;
  }

  get pid(): number | undefined {
    return this.runtime.pid;
  }

  abstract chat(input: ChatInput, options?: ChatOptions): AsyncIterable<RuntimeEvent>;

  close(): Promise<void> {
    return this.runtime.close();
  }
}
