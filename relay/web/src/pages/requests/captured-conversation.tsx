/** A captured message as the relay keeps it (the gateway's domain message: text joined, images and tool calls apart). */
interface CapturedMessage {
  role: string;
  content: string;
  toolCalls?: { id?: string; name: string; arguments: string }[];
  toolCallId?: string;
  parts?: { type: string; text?: string; imageUrl?: string }[];
}

function isMessages(v: unknown): v is CapturedMessage[] {
  return Array.isArray(v) && v.every((m) => typeof m === "object" && m !== null && typeof (m as CapturedMessage).role === "string" && typeof (m as CapturedMessage).content === "string");
}

/** Who said a message, in words. */
const ROLE_WORDS: Record<string, string> = { system: "System", developer: "Developer", user: "User", assistant: "Assistant", tool: "Tool result" };

/** An image part as words: its address, a data URI only by its kind (the picture itself is not shown). */
const imageText = (url: string | undefined) => (url?.startsWith("data:") ? `[image: ${url.slice(5, url.indexOf(";") > 0 ? url.indexOf(";") : 30)}]` : `[image: ${url ?? "?"}]`);

/**
 * A captured request's messages as the conversation it was (who said what, in order, with its images and tool
 * calls named), then its answer; the JSON as kept is one click away. Messages cut to the capture's size (kept as
 * their JSON text) are shown as that text.
 */
export function CapturedConversation({ messages, answer, toolCalls }: { messages: unknown; answer: string; toolCalls: { name: string; arguments: string }[] }) {
  return (
    <>
      {isMessages(messages) ? (
        <ol class="conversation" data-testid="capture-messages" aria-label="Messages">
          {messages.map((m, i) => (
            <li key={i} class={`turn ${m.role}`}>
              <span class="turn-role">
                {ROLE_WORDS[m.role] ?? m.role}
                {m.toolCallId ? ` (${m.toolCallId})` : ""}
              </span>
              <div class="turn-text">
                {m.parts?.length ? m.parts.map((p) => (p.type === "image_url" ? imageText(p.imageUrl) : (p.text ?? ""))).join("\n") : m.content || <span class="muted">(no text)</span>}
              </div>
              {m.toolCalls?.map((c, j) => (
                <div key={j} class="turn-call mono small">
                  → {c.name}({c.arguments})
                </div>
              ))}
            </li>
          ))}
          <li class="turn assistant answer" data-testid="capture-answer">
            <span class="turn-role">Answer</span>
            <div class="turn-text">{answer || <span class="muted">(no text)</span>}</div>
            {toolCalls.map((c, j) => (
              <div key={j} class="turn-call mono small">
                → {c.name}({c.arguments})
              </div>
            ))}
          </li>
        </ol>
      ) : (
        <>
          <h3>Messages</h3>
          <pre class="capture" data-testid="capture-messages">
            {typeof messages === "string" ? messages : JSON.stringify(messages, null, 2)}
          </pre>
          <h3>Answer</h3>
          <pre class="capture" data-testid="capture-answer">
            {answer || "(no text)"}
            {toolCalls.map((c) => `\n→ ${c.name}(${c.arguments})`).join("")}
          </pre>
        </>
      )}
      {isMessages(messages) && (
        <details class="small">
          <summary>The messages as kept (JSON)</summary>
          <pre class="capture">{JSON.stringify(messages, null, 2)}</pre>
        </details>
      )}
    </>
  );
}
