import { bodyText, serverSentEvents } from "../../../../proto/sse/index.js";
import { ApiError } from "./admin-client.js";

/** One message of a chat, as the gateway takes it. */
export interface ChatMessage {
  role: "system" | "user" | "assistant";
  content: string;
}

/**
 * Calls the gateway (`/v1/chat/completions`, streamed) exactly as an API client
 * does, with an API key, and hands each piece of text to `onText` as it arrives.
 * Resolves with the finish reason and usage; aborting `signal` stops generation.
 */
export async function streamChat(
  options: { apiKey: string; model: string; messages: ChatMessage[]; temperature: number; maxTokens: number | null; signal: AbortSignal },
  onText: (text: string) => void,
): Promise<{ finishReason: string | null; usage: { prompt_tokens: number; completion_tokens: number } | null }> {
  const res = await fetch("/v1/chat/completions", {
    method: "POST",
    headers: { authorization: `Bearer ${options.apiKey}`, "content-type": "application/json" },
    body: JSON.stringify({
      model: options.model,
      messages: options.messages,
      temperature: options.temperature,
      ...(options.maxTokens ? { max_tokens: options.maxTokens } : {}),
      stream: true,
      stream_options: { include_usage: true },
    }),
    signal: options.signal,
  });
  if (!res.ok || !res.body) {
    const body = (await res.json().catch(() => null)) as { error?: { message?: string; code?: string; param?: string } } | null;
    throw new ApiError(res.status, body?.error?.code ?? null, body?.error?.param ?? null, body?.error?.message ?? `The gateway answered ${res.status}.`);
  }
  let finishReason: string | null = null;
  let usage: { prompt_tokens: number; completion_tokens: number } | null = null;
  for await (const { data } of serverSentEvents(bodyText(res.body))) {
    if (!data || data === "[DONE]") continue;
    const chunk = JSON.parse(data) as {
      choices?: { delta?: { content?: string }; finish_reason?: string | null }[];
      usage?: { prompt_tokens: number; completion_tokens: number } | null;
      error?: { message?: string; code?: string };
    };
    if (chunk.error) throw new ApiError(500, chunk.error.code ?? null, null, chunk.error.message ?? "The stream failed.");
    const choice = chunk.choices?.[0];
    if (choice?.delta?.content) onText(choice.delta.content);
    if (choice?.finish_reason) finishReason = choice.finish_reason;
    if (chunk.usage) usage = chunk.usage;
  }
  return { finishReason, usage };
}
