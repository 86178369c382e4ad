import { useLive } from "../../api/use-live.js";
import { useApp } from "../../app-context.js";
import { Link } from "../../components/link.js";
import { Loading, NotLoaded, PageHeader } from "../../components/notice.js";
import { StateBadge } from "../../components/state-badge.js";
import { CapturedConversation } from "./captured-conversation.js";
import { apiText, endingText, msText, OUTCOME_BADGE, outcomeOf, tierText } from "./request-words.js";

/** One request of the log: who, what, how it ended and how long it took; its prompt and answer while its stack's capture keeps them (admins). */
export function RequestPage({ id }: { id: string }) {
  const { client } = useApp();
  const request = useLive(() => client.call("GET /admin/v1/requests/:id", { params: { id } }), [], [id]);
  // The machine by its name (one that is gone since keeps its id).
  const machineId = request.data?.machine_id ?? null;
  const machine = useLive(() => (machineId ? client.call("GET /admin/v1/machines/:id", { params: { id: machineId } }).catch(() => undefined) : Promise.resolve(undefined)), [], [machineId]);
  if (request.error && !request.data) return <NotLoaded thing="request" error={request.error} back="/requests" />;
  const r = request.data;
  if (!r) return <Loading thing="request" />;
  return (
    <>
      <PageHeader
        title={`${r.model || "Unknown model"} · ${new Date(r.at).toLocaleString()}`}
        subtitle={
          <>
            <StateBadge state={OUTCOME_BADGE[outcomeOf(r)]} label={String(r.status)} /> {endingText(r)}
          </>
        }
      >
        <Link href="/requests" class="button secondary">
          All requests
        </Link>
      </PageHeader>
      <section class="card" aria-labelledby="request-facts">
        <h2 id="request-facts">Request</h2>
        <dl class="values">
          <dt>API</dt>
          <dd data-testid="request-api">{apiText(r.api)}</dd>
          <dt>Service tier</dt>
          <dd data-testid="request-tier">{r.service_tier ? tierText(r.service_tier) : "—"}</dd>
          <dt>Key</dt>
          <dd>{r.key_id ? <Link href={`/requests?key=${r.key_id}`}>{r.key_name ?? r.key_id}</Link> : "—"}</dd>
          <dt>Model</dt>
          <dd class="mono">
            {r.model || "—"}
            {r.stream ? " (streamed)" : ""}
          </dd>
          <dt>Stack</dt>
          <dd>{r.stack_id ? <Link href={`/stacks/${r.stack_id}`}>{r.stack_name ?? r.stack_id}</Link> : "— (refused before one was chosen)"}</dd>
          <dt>Machine</dt>
          <dd data-testid="request-machine">{r.machine_id ? <Link href={`/machines/${r.machine_id}`}>{machine.data?.id === r.machine_id ? machine.data.name : r.machine_id}</Link> : "—"}</dd>
          <dt>Error code</dt>
          <dd class="mono">{r.error_code ?? "—"}</dd>
          <dt>Tokens</dt>
          <dd data-testid="request-tokens">
            {r.prompt_tokens.toLocaleString("en-US")} in{r.cached_tokens > 0 ? ` (${r.cached_tokens.toLocaleString("en-US")} of them cached: not evaluated again)` : ""}, {r.completion_tokens.toLocaleString("en-US")} out
          </dd>
          <dt>Latency</dt>
          <dd>{msText(r.latency_ms)}</dd>
          <dt>{r.stream ? "First token" : "Answer ready"}</dt>
          <dd>{msText(r.first_token_ms)}</dd>
          {r.load_ms !== null && (
            <>
              <dt>Waited for the model to load</dt>
              <dd>{msText(r.load_ms)}</dd>
            </>
          )}
          <dt>Request id</dt>
          <dd class="mono">{r.request_id}</dd>
        </dl>
      </section>
      <section class="card" aria-labelledby="request-capture">
        <h2 id="request-capture">Prompt and answer</h2>
        {r.capture ? (
          <>
            <p class="muted small">
              Kept until {new Date(r.capture_until!).toLocaleString()} (the stack captures prompts and answers).{r.capture.truncated && " Cut to 64 KiB."}
            </p>
            <CapturedConversation messages={r.capture.messages} answer={r.capture.answer} toolCalls={r.capture.tool_calls} />
          </>
        ) : (
          <p class="muted" data-testid="capture-none">
            {r.captured ? "Kept, but only admins read prompts and answers." : "Not kept. A stack keeps its requests' prompts and answers only when an admin turns on capture on its page."}
          </p>
        )}
      </section>
    </>
  );
}
