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
 */
export function paceEvaluation(sequence: LlamaContextSequence, beforeNextToken: () => Promise<void> | void): void {
  const evaluate = sequence.evaluate.bind(sequence);
  sequence.evaluate = (tokens, options) => paced(evaluate(tokens, options), beforeNextToken);
}

type Evaluation = AsyncGenerator<Token, void, void | Token | Token[]>;

async function* paced(inner: Evaluation, beforeNextToken: () => Promise<void> | void): Evaluation {
  try {
    let step = await inner.next();
    while (!step.done) {
      const replacement = yield step.value;
      await beforeNextToken();
      step = await inner.next(replacement);
    }
  } finally {
    await inner.return();
  }
}
