import type { LlamaContextSequence, Token } from "node-llama-cpp";

/**
 * Makes a context sequence decode only as fast as its reader takes the text.
 *
 * node-llama-cpp's LlamaChat reports text through callbacks it does not await,
 * so on its own it decodes a whole answer however slowly the client reads. But
 * it draws every token from `sequence.evaluate()`, an async generator that
 * decodes the next token only when asked. This wraps that generator so that
 * before each next token it awaits `beforeNextToken()`: while that promise is
 * pending the sequence decodes nothing (the context's other sequences go on).
 * It also counts every token decoded, the words of a function call included
 * (LlamaChat's `onToken` reports only the text of the answer).
 */
export function paceEvaluation(sequence: LlamaContextSequence, hooks: PaceHooks): void {
  const evaluate = sequence.evaluate.bind(sequence);
  sequence.evaluate = (tokens, options) => paced(evaluate(tokens, options), hooks);
}

/** What a paced sequence calls: `generated` for every token it decodes, `beforeNextToken` before decoding the next. */
export interface PaceHooks {
  generated: () => void;
  beforeNextToken: () => Promise<void> | void;
}

type Evaluation = AsyncGenerator<Token, void, void | Token | Token[]>;

async function* paced(inner: Evaluation, hooks: PaceHooks): Evaluation {
  try {
    let step = await inner.next();
    while (!step.done) {
      hooks.generated();
      const replacement = yield step.value;
      await hooks.beforeNextToken();
      step = await inner.next(replacement);
    }
  } finally {
    await inner.return();
  }
}
