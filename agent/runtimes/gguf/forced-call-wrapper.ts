import { LlamaText, type ChatWrapper } from "node-llama-cpp";

/**
 * The model's own chat wrapper, changed in one thing: its answer must begin with a function call
 * (`tool_choice` `required`, or a named function). node-llama-cpp's prefix-trigger mechanism does the work:
 * with no trigger to match, the `noPrefixTrigger` action puts the wrapper's function-call prefix into the
 * context and has the model pick a function by grammar, then write its arguments by grammar. Wrappers whose
 * template opens the answer in function-calling mode themselves (Functionary) just lose the way out of it.
 * Everything else (the template, how functions are documented, the call syntax) is the wrapper's own.
 */
export function forcedCallWrapper(wrapper: ChatWrapper): ChatWrapper {
  const forced = Object.create(wrapper) as ChatWrapper;
  forced.generateContextState = (options) => {
    const state = wrapper.generateContextState(options);
    if (state.functionCall || state.ignoreStartText) return { ...state, functionCall: { initiallyEngaged: true, disengageInitiallyEngaged: [] } };
    const { contextText, stopGenerationTriggers, rerender } = state;
    return { contextText, stopGenerationTriggers, rerender, noPrefixTrigger: { type: "functionCall", inject: LlamaText(wrapper.settings.functions.call.prefix) } };
  };
  return forced;
}
