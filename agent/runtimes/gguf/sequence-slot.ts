import type { LlamaChat, LlamaContextSequence, Token } from "node-llama-cpp";
import type { RuntimeEvent } from "../model-runtime.js";

/** Text chunks decoded ahead of the reader before a sequence pauses its decoding. */
const READ_AHEAD = 4;

/** A context sequence with its chats, and what its decoding waits for before each next token. */
export interface Slot {
  sequence: LlamaContextSequence;
  chat: LlamaChat;
  /** The same sequence, with a chat wrapper whose answer must begin with a function call. */
  forcedCallChat: LlamaChat;
  beforeNextToken: (() => Promise<void> | undefined) | undefined;
  /** Called for each token decoded for the request being served. */
  generated: (() => void) | undefined;
  /** True while its decoding waits for the reader to take text. */
  paused: boolean;
}

/**
 * The events decoded but not yet taken by the reader, and how the decoder resumes. Decoding pauses while
 * READ_AHEAD of them wait, so a reader that stops reading (a slow client, no credit) stops the decoder too.
 */
export function readAhead(slot: Slot, stopped: AbortSignal): { pending: RuntimeEvent[]; resumeDecoder: () => void } {
  const pending: RuntimeEvent[] = [];
  let wakeDecoder: (() => void) | undefined;
  const resumeDecoder = () => {
    const wake = wakeDecoder;
    wakeDecoder = undefined;
    slot.paused = false;
    wake?.();
  };
  slot.beforeNextToken = () => {
    if (pending.length < READ_AHEAD || stopped.aborted) return undefined;
    slot.paused = true;
    return new Promise<void>((resolve) => (wakeDecoder = resolve));
  };
  return { pending, resumeDecoder };
}

/**
 * How many of a prompt's tokens a sequence holds evaluated already, from the start: what node-llama-cpp keeps
 * when the sequence serves that prompt next (it evaluates only the rest).
 */
function sharedPrefix(slot: Slot, prompt: readonly Token[]): number {
  return slot.sequence.compareContextTokens(prompt as Token[]).firstDifferentIndex;
}

/**
 * How a free sequence suits a prompt: the tokens of it it holds, when that is at least half the prompt; 0
 * otherwise, so a request that shares only a little (a chat template's first tokens) takes the sequence used
 * longest ago instead of one that holds another conversation (as llama.cpp's server does, at its default 0.5).
 */
export function sequenceFit(slot: Slot, prompt: readonly Token[]): number {
  const shared = sharedPrefix(slot, prompt);
  return shared * 2 >= prompt.length ? shared : 0;
}

/**
 * Measures how many of a request's prompt tokens its sequence did not evaluate again: the prompt's tokens less
 * those the sequence evaluated before it decoded the answer's first token (node-llama-cpp counts what it
 * evaluates in the sequence's token meter: the prompt's last token, whose logits give the first token, as
 * output). Call `first()` when the first token is decoded.
 */
export function promptCacheMeter(slot: Slot): { first: () => void; cached: (promptTokens: number) => number } {
  const meter = slot.sequence.tokenMeter;
  const before = meter.usedInputTokens + meter.usedOutputTokens;
  let evaluated: number | undefined;
  return {
    first: () => {
      evaluated ??= meter.usedInputTokens + meter.usedOutputTokens - before;
    },
    cached: (promptTokens) => (evaluated === undefined ? 0 : Math.max(0, Math.min(promptTokens, promptTokens - evaluated))),
  };
}
