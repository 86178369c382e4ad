import { describe, expect, it } from "vitest";
import { MakinaError } from "../../proto/index.js";
import { checkChatRequest, type ChatDraft, type DraftTool, type DraftToolChoice, type Named } from "../../relay/http/chat/index.js";

/**
 * The one check of a chat request, fed as a decoder of an API this gateway does not have would feed it: its
 * names are made up, and every refusal says them. A new API costs its decoder, nothing here.
 */
const at = <T = unknown>(value: T, name: string): Named<T> => ({ value, name });

const draft = (over: Partial<ChatDraft> = {}): ChatDraft => ({
  model: "m",
  modelName: "engine",
  messages: [{ role: "user", content: "hi" }],
  places: [{ at: "turns[0]" }],
  messagesName: "turns",
  images: [],
  stream: false,
  includeUsage: false,
  temperature: at(undefined, "sampling.heat"),
  maxTokens: at(undefined, "limits.answer"),
  needs: [],
  ...over,
});

function refusal(d: ChatDraft): MakinaError {
  try {
    checkChatRequest(d);
  } catch (err) {
    if (err instanceof MakinaError) return err;
    throw err;
  }
  throw new Error("expected the request to be refused");
}

describe("the one check of a chat request", () => {
  it("names the made-up API's own fields in its refusals, in their text too", () => {
    expect(refusal(draft({ temperature: at(3, "sampling.heat") }))).toMatchObject({ code: "invalid_value", param: "sampling.heat", message: expect.stringContaining("'sampling.heat'") });
    expect(refusal(draft({ maxTokens: at(0, "limits.answer") })).param).toBe("limits.answer");
    expect(refusal(draft({ stop: at(["a", "b", "c", "d", "e"], "halt_on") })).param).toBe("halt_on");
    expect(refusal(draft({ messages: [], places: [] }))).toMatchObject({ param: "turns", message: expect.stringContaining("'turns'") });
  });

  it("holds the conversation's tool turns, naming where the result or the next message came from", () => {
    const call = { role: "assistant", content: "", toolCalls: [{ id: "c1", name: "f", arguments: "{}" }] };
    const orphan = refusal(draft({ messages: [{ role: "tool", content: "x", toolCallId: "c9" }], places: [{ at: "turns[0]", callId: "turns[0].answers" }] }));
    expect(orphan).toMatchObject({ param: "turns[0].answers", message: expect.stringContaining("'c9'") });
    const unanswered = refusal(draft({ messages: [call, { role: "user", content: "and?" }], places: [{ at: "turns[0]" }, { at: "turns[1]" }] }));
    expect(unanswered).toMatchObject({ param: "turns[1]", message: expect.stringContaining("c1") });
    expect(checkChatRequest(draft({ messages: [call, { role: "tool", content: "ok", toolCallId: "c1" }], places: [{ at: "turns[0]" }, { at: "turns[1]", callId: "turns[1].answers" }] })).input.messages).toHaveLength(2);
  });

  it("holds the tools and the choice among them to the vendors' rules, by the API's names", () => {
    const fns = (list: DraftTool[]): Named<DraftTool[]> => ({ value: list, name: "fns" });
    const tool = (name: unknown, parameters: unknown = undefined) => ({ name: at(name, "fns[0].id"), description: at(undefined, "fns[0].about"), parameters: at(parameters, "fns[0].args"), strict: at(undefined, "fns[0].exact") });
    expect(refusal(draft({ tools: fns([tool("has space")]) })).param).toBe("fns[0].id");
    expect(refusal(draft({ tools: fns([tool("f", { type: "string" })]) })).param).toBe("fns[0].args");
    expect(refusal(draft({ tools: fns([tool("f")]), toolChoice: at<DraftToolChoice>({ mode: "function", function: "g", functionName: "pick.id" }, "pick") }))).toMatchObject({ param: "pick.id", message: expect.stringContaining("'g'") });
    expect(refusal(draft({ tools: fns([]), toolChoice: at<DraftToolChoice>({ mode: "required" }, "pick") }))).toMatchObject({ param: "pick", message: expect.stringContaining("only allowed when 'fns'") });
    const served = checkChatRequest(draft({ tools: fns([tool("f")]), toolChoice: at<DraftToolChoice>({ mode: "required" }, "pick") }));
    expect(served.input).toMatchObject({ tools: [{ name: "f" }], toolChoice: "required" });
    expect(served.needs).toEqual(["tools", "tool_choice"]);
  });

  it("keeps the API's names for what the plan and the runtime refuse later", () => {
    const request = checkChatRequest(
      draft({
        maxTokens: at(5, "limits.answer"),
        images: ["turns[0].pics[1]"],
        responseFormat: { name: "shape", type: at("json_object", "shape.kind"), schemaName: at(undefined, "shape"), description: at(undefined, "shape"), schema: at(undefined, "shape"), strict: at(undefined, "shape") },
        needs: [{ value: "logprobs", name: "odds" }],
      }),
    );
    expect(request.needs).toEqual(["response_format", "image_url", "logprobs"]);
    expect(["max_tokens", "messages", "model", "response_format", "response_format.type", "image_url", "logprobs", "seed"].map(request.paramName)).toEqual(["limits.answer", "turns", "engine", "shape", "shape.kind", "turns[0].pics[1]", "odds", "seed"]);
    expect(request.imagePart).toBe("turns[0].pics[1]");
  });
});
