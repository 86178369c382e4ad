import { randomBytes } from "node:crypto";
import type { RuntimeEvent } from "../model-runtime.js";

/** An OpenAI-style tool call id. */
function newCallId(): string {
  return `call_${randomBytes(18).toString("base64url").replace(/[-_]/g, "0")}`;
}

/**
 * Turns node-llama-cpp's function calls into the link's tool-call pieces: the first piece of each call
 * carries a new `call_` id and the function's name, the next ones the arguments' JSON text as the model
 * writes it. Whitespace the grammar lets the model write after the JSON is held back until something
 * follows it, so the arguments never end in it; a function without parameters gets "{}".
 */
export class ToolCallPieces {
  /** Per call: whitespace held back. */
  private readonly calls: { held: string }[] = [];
  private completed = 0;

  constructor(private readonly emit: (ev: RuntimeEvent) => void) {}

  piece(index: number, name: string, chunk: string): void {
    let call = this.calls[index];
    const first = call === undefined;
    call ??= this.calls[index] = { held: "" };
    let text = call.held + chunk;
    if (first) text = text.trimStart();
    const kept = text.trimEnd();
    call.held = text.slice(kept.length);
    if (first) this.emit({ type: "toolCall", index, id: newCallId(), name, arguments: kept });
    else if (kept) this.emit({ type: "toolCall", index, id: "", name: "", arguments: kept });
  }

  /** A call is complete; one whose arguments came in no piece (a function without parameters) is sent whole. */
  called(name: string, params: unknown): void {
    const index = this.completed++;
    if (this.calls[index]) return;
    this.calls[index] = { held: "" };
    this.emit({ type: "toolCall", index, id: newCallId(), name, arguments: params === undefined ? "{}" : JSON.stringify(params) });
  }
}
