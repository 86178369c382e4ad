import { useEffect, useRef, useState } from "preact/hooks";
import { ApiError, type AdminClient } from "../../api/admin-client.js";
import { streamChat, type ChatMessage } from "../../api/chat-stream.js";
import type { SessionInfo, Stack } from "../../api/types.js";
import { useApp } from "../../app-context.js";
import { Notice } from "../../components/notice.js";
import { TabList } from "../../components/tab-list.js";
import { EmbeddingsPanel } from "./embeddings-panel.js";
import { RerankPanel } from "./rerank-panel.js";
import { isPlaygroundKeyChange, keepPlaygroundKey, keptPlaygroundKey, PLAYGROUND_KEY_MS, PLAYGROUND_NAME, PLAYGROUND_RPM } from "./playground-key.js";

const MODES = [
  { value: "chat", label: "Chat" },
  { value: "embeddings", label: "Embeddings" },
] as const;

/**
 * A chat box (and, for a stack that serves embeddings, two texts to compare; for a reranker, documents to rank) that talks to the stack through the real gateway path
 * (`/v1/chat/completions`, streamed) with an API key restricted to this stack:
 * one the user creates here or pastes. The playground's own key is one per person and stack, shared by every tab
 * of this browser, limited and working for a day; a new one revokes the one before.
 */
export function Playground({ stack }: { stack: Stack }) {
  const { client, session } = useApp();
  const userId = session.user.id;
  const [apiKey, rememberKey] = useKeptKey(userId, stack.id);
  const [messages, setMessages] = useState<ChatMessage[]>([]);
  const [draft, setDraft] = useState("");
  const [temperature, setTemperature] = useState(0.7);
  const [maxTokens, setMaxTokens] = useState(256);
  const [error, setError] = useState<string | null>(null);
  const [stats, setStats] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const embeds = stack.compatibility.serves.includes("embeddings");
  const chats = stack.compatibility.serves.includes("chat");
  const [mode, setMode] = useState<(typeof MODES)[number]["value"]>("chat");
  const controller = useRef<AbortController | null>(null);

  useEffect(() => () => controller.current?.abort(), []);

  const createKey = async () => {
    setError(null);
    try {
      const made = await makePlaygroundKey(client, session, stack.id);
      rememberKey(made.key, made.expiresAt);
    } catch (err) {
      setError((err as ApiError).message);
    }
  };

  const send = async (e: Event) => {
    e.preventDefault();
    const text = draft.trim();
    if (!text || busy) return;
    const history: ChatMessage[] = [...messages, { role: "user", content: text }];
    setMessages([...history, { role: "assistant", content: "" }]);
    setDraft("");
    setError(null);
    setStats(null);
    setBusy(true);
    const c = new AbortController();
    controller.current = c;
    const started = performance.now();
    let answer = "";
    try {
      const { finishReason, usage } = await streamChat({ apiKey, model: stack.model_id, messages: history, temperature, maxTokens: maxTokens || null, signal: c.signal }, (piece) => {
        answer += piece;
        setMessages([...history, { role: "assistant", content: answer }]);
      });
      const seconds = (performance.now() - started) / 1000;
      setStats(`${usage ? `${usage.prompt_tokens} prompt + ${usage.completion_tokens} completion tokens · ` : ""}${seconds.toFixed(1)} s${finishReason === "length" ? " · stopped at max tokens" : ""}`);
    } catch (err) {
      if (c.signal.aborted) setStats("Stopped.");
      else {
        setError(err instanceof ApiError ? err.message : String(err));
        if (err instanceof ApiError && err.status === 401) rememberKey("");
      }
      if (!answer) setMessages(history);
    } finally {
      setBusy(false);
      controller.current = null;
    }
  };

  const chat = (
    <>
          <ChatLog messages={messages} busy={busy} modelId={stack.model_id} />
          {error && <Notice tone="error">{error}</Notice>}
          <form class="chat-form" onSubmit={send}>
            <label class="sr-only" for="chat-input">
              Message
            </label>
            <textarea
              id="chat-input"
              rows={2}
              value={draft}
              placeholder="Write a message; Enter sends, Shift+Enter adds a line"
              onInput={(e) => setDraft(e.currentTarget.value)}
              onKeyDown={(e) => e.key === "Enter" && !e.shiftKey && void send(e)}
            />
            <ChatControls
              temperature={temperature}
              onTemperature={setTemperature}
              maxTokens={maxTokens}
              onMaxTokens={setMaxTokens}
              busy={busy}
              canSend={draft.trim() !== ""}
              onStop={() => controller.current?.abort()}
              onClear={messages.length === 0 ? undefined : () => setMessages([])}
            />
          </form>
    </>
  );

  return (
    <section class="card" aria-labelledby="playground-title">
      <h2 id="playground-title">Playground</h2>
      {!apiKey ? (
        <KeyChooser onCreate={createKey} onPaste={(key) => rememberKey(key)} error={error} />
      ) : (
        <>
          {!chats ? (
            <ScoringPanel stack={stack} apiKey={apiKey} onUnauthorized={() => rememberKey("")} />
          ) : embeds ? (
            <TabList id="playground" label="What to try" tabs={MODES} value={mode} onChange={setMode}>
              {mode === "chat" ? chat : <EmbeddingsPanel apiKey={apiKey} model={stack.model_id} onUnauthorized={() => rememberKey("")} />}
            </TabList>
          ) : (
            chat
          )}
          <p class="muted small">
            {stats && mode === "chat" ? `${stats} · ` : ""}Using key {apiKey.slice(0, 12)}…{" "}
            <button type="button" class="link-button" onClick={() => rememberKey("")}>
              forget
            </button>
          </p>
        </>
      )}
    </section>
  );
}

/** What to try on a stack that answers no chat: two texts to compare (an embedding model), or documents to rank (a reranker). */
function ScoringPanel({ stack, apiKey, onUnauthorized }: { stack: Stack; apiKey: string; onUnauthorized: () => void }) {
  return stack.compatibility.serves.includes("embeddings") ? (
    <EmbeddingsPanel apiKey={apiKey} model={stack.model_id} onUnauthorized={onUnauthorized} />
  ) : (
    <RerankPanel apiKey={apiKey} model={stack.model_id} onUnauthorized={onUnauthorized} />
  );
}

/** The key this person keeps for the stack in this browser, and how to keep another; one made or forgotten in another tab holds here too. */
function useKeptKey(userId: string, stackId: string): [string, (key: string, expiresAt?: number) => void] {
  const [apiKey, setApiKey] = useState(() => keptPlaygroundKey(userId, stackId));
  useEffect(() => {
    const onStorage = (e: StorageEvent) => {
      if (isPlaygroundKeyChange(e.key, userId, stackId)) setApiKey(keptPlaygroundKey(userId, stackId));
    };
    addEventListener("storage", onStorage);
    return () => removeEventListener("storage", onStorage);
  }, [userId, stackId]);
  const rememberKey = (key: string, expiresAt?: number) => {
    setApiKey(key);
    keepPlaygroundKey(userId, stackId, key, expiresAt);
  };
  return [apiKey, rememberKey];
}

/**
 * Makes this person's playground key for the stack: restricted to it, limited within the organization's default
 * (which a member's key may not exceed), working for a day. Those they made for it before (in a browser that lost
 * it) stop working.
 */
async function makePlaygroundKey(client: AdminClient, session: SessionInfo, stackId: string): Promise<{ key: string; expiresAt: number }> {
  const name = `${PLAYGROUND_NAME}${session.user.login}`;
  const mine = await client.call("GET /admin/v1/keys", { query: { q: PLAYGROUND_NAME, state: "active", per_page: 1000 } });
  const earlier = mine.data.filter((k) => k.created_by === session.user.id && k.name === name && k.stack_ids?.length === 1 && k.stack_ids[0] === stackId);
  for (const k of earlier) await client.call("POST /admin/v1/keys/:id/revoke", { params: { id: k.id } });
  const orgDefault = (await client.call("GET /admin/v1/orgs")).data.find((o) => o.id === session.org.id)?.default_key_rpm ?? null;
  const expiresAt = Date.now() + PLAYGROUND_KEY_MS;
  const k = await client.call("POST /admin/v1/keys", {
    body: { org: session.org.id, name, stacks: [stackId], rpm: Math.min(PLAYGROUND_RPM, orgDefault ?? PLAYGROUND_RPM), expires_at: new Date(expiresAt).toISOString() },
  });
  return { key: k.key ?? "", expiresAt };
}

/** Before the playground has a key: make one, or paste one. */
function KeyChooser({ onCreate, onPaste, error }: { onCreate: () => void; onPaste: (key: string) => void; error: string | null }) {
  return (
    <div class="playground-key">
      <p>The playground calls the gateway like your code would, with an API key for this stack.</p>
      <div class="form-actions">
        <button type="button" class="button primary" onClick={onCreate}>
          Create a playground key
        </button>
        <span class="muted">or</span>
        <label class="sr-only" for="playground-paste">
          Paste an API key
        </label>
        <input id="playground-paste" placeholder="paste an mk_live_… key" onChange={(e) => onPaste(e.currentTarget.value.trim())} />
      </div>
      {error && <Notice tone="error">{error}</Notice>}
    </div>
  );
}

/** The chat's sampling settings and its buttons: send (or stop while it answers) and clear. */
function ChatControls(p: {
  temperature: number;
  onTemperature: (t: number) => void;
  maxTokens: number;
  onMaxTokens: (n: number) => void;
  busy: boolean;
  canSend: boolean;
  onStop: () => void;
  /** Absent when there is nothing to clear. */
  onClear: (() => void) | undefined;
}) {
  return (
    <div class="chat-controls">
      <label for="temperature">
        Temperature <output>{p.temperature.toFixed(1)}</output>
      </label>
      <input id="temperature" type="range" min="0" max="2" step="0.1" value={p.temperature} onInput={(e) => p.onTemperature(Number(e.currentTarget.value))} />
      <label for="max-tokens">Max tokens</label>
      <input id="max-tokens" type="number" min="1" max="32768" value={p.maxTokens} onInput={(e) => p.onMaxTokens(Number(e.currentTarget.value))} class="narrow" />
      {p.busy ? (
        <button type="button" class="button secondary" onClick={p.onStop}>
          Stop
        </button>
      ) : (
        <button type="submit" class="button primary" disabled={!p.canSend}>
          Send
        </button>
      )}
      <button type="button" class="button ghost" onClick={p.onClear} disabled={p.busy || !p.onClear}>
        Clear
      </button>
    </div>
  );
}

/** The conversation so far, kept scrolled to its newest words; the answer being written shows as typing until its first. */
function ChatLog({ messages, busy, modelId }: { messages: ChatMessage[]; busy: boolean; modelId: string }) {
  const log = useRef<HTMLDivElement>(null);
  useEffect(() => {
    log.current?.scrollTo({ top: log.current.scrollHeight });
  }, [messages]);
  return (
    <div class="chat-log" ref={log} aria-live="polite" data-testid="chat-log">
      {messages.length === 0 && <p class="muted">Say something to {modelId}.</p>}
      {messages.map((m, i) => (
        <div key={i} class={`bubble ${m.role}`} data-role={m.role}>
          {m.content || (busy && i === messages.length - 1 ? <span class="typing" aria-label="Generating" /> : "")}
        </div>
      ))}
    </div>
  );
}
