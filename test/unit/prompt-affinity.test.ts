import { describe, expect, it } from "vitest";
import { decodeMessagesRequest } from "../../relay/http/anthropic/index.js";
import { decodeChatRequest } from "../../relay/http/openai/index.js";
import { promptAffinity } from "../../relay/routing/prompt-affinity.js";

/**
 * Which requests the relay sends to the same replica (issue 44, point 4): a client's `prompt_cache_key`, else its
 * `user`, else Anthropic's `metadata.user_id`, else the conversation's system prompt and first message.
 */
describe("the prompt a request shares with others", () => {
  const system = { role: "system", content: "You are the support agent of Acme. Answer from the manual." };
  const turn = (...later: string[]) => [system, { role: "user", content: "My order is late." }, ...later.map((content, i) => ({ role: i % 2 ? "user" : "assistant", content }))];
  const chat = (body: Record<string, unknown>) => {
    const request = decodeChatRequest({ model: "m", ...body });
    return promptAffinity(request.input, request.cacheKey);
  };

  it("keeps a conversation's turns together by its system prompt and first message, and tells other conversations apart", () => {
    const first = chat({ messages: turn() });
    expect(chat({ messages: turn("Sorry to hear it. Which order?", "Number 1234.") })).toBe(first);
    expect(chat({ messages: turn("Sorry to hear it.", "Number 1234.", "It left today.", "Thanks.") })).toBe(first);
    // Another first message, or another system prompt: another conversation.
    expect(chat({ messages: [system, { role: "user", content: "How do I return a lamp?" }] })).not.toBe(first);
    expect(chat({ messages: [{ ...system, content: "You are a poet." }, { role: "user", content: "My order is late." }] })).not.toBe(first);
  });

  it("takes prompt_cache_key over user, and user over the messages", () => {
    const byMessages = chat({ messages: turn() });
    const byUser = chat({ messages: turn(), user: "user-7" });
    const byKey = chat({ messages: turn(), user: "user-7", prompt_cache_key: "tenant-3" });
    expect(new Set([byMessages, byUser, byKey]).size).toBe(3);
    // The user alone decides, whatever the conversation; the key alone decides, whoever the user.
    expect(chat({ messages: [{ role: "user", content: "Something else entirely" }], user: "user-7" })).toBe(byUser);
    expect(chat({ messages: [{ role: "user", content: "Something else entirely" }], user: "user-9", prompt_cache_key: "tenant-3" })).toBe(byKey);
    // Empty words are no words.
    expect(chat({ messages: turn(), user: "", prompt_cache_key: "" })).toBe(byMessages);
  });

  it("takes Anthropic's metadata.user_id for the Messages API, and the system prompt and first message without it", () => {
    const messages = (body: Record<string, unknown>) => {
      const request = decodeMessagesRequest({ model: "m", max_tokens: 5, system: system.content, messages: [{ role: "user", content: "My order is late." }], ...body });
      return promptAffinity(request.input, request.cacheKey);
    };
    expect(messages({ metadata: { user_id: "user-7" } })).toBe(chat({ messages: [{ role: "user", content: "Other" }], user: "user-7" }));
    expect(messages({ metadata: { user_id: "user-7" } })).not.toBe(messages({}));
    // Without it, the same conversation sent to either API goes to the same replica.
    expect(messages({})).toBe(chat({ messages: turn() }));
  });
});
