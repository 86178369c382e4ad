import { useState } from "preact/hooks";
import type { ApiError } from "../../api/admin-client.js";
import type { AlertWebhook } from "../../api/types.js";
import { useLive } from "../../api/use-live.js";
import { useRefresh } from "../../api/use-refresh.js";
import { useApp } from "../../app-context.js";
import { ConfirmBar } from "../../components/confirm-bar.js";
import { DataTable } from "../../components/data-table.js";
import { describedBy, Field } from "../../components/field.js";
import { formatAgo } from "../../components/format.js";
import { FormActions } from "../../components/form-actions.js";
import { EmptyState, Notice, PageHeader } from "../../components/notice.js";
import { NewSecret } from "../keys/new-secret.js";

/** The events, in the words the page says them in. */
const EVENTS: [string, string][] = [
  ["machine.offline", "A machine goes offline"],
  ["runtime.failed", "A runtime fails"],
  ["budget.threshold", "A token budget reaches 80% and 100%"],
  ["error_rate", "Requests fail above a rate over 5 minutes"],
  ["key.expiring", "A key expires within a day"],
];

/**
 * The organization's alerts (admins): webhooks that are told of events (Slack's incoming webhooks as they are),
 * each signed with a secret shown once; a test sends one now, and each webhook's deliveries say how they went.
 */
export function AlertsPage() {
  const { client, session, notify } = useApp();
  const hooks = useLive(() => client.call("GET /admin/v1/alerts", { query: { org: session.org.id } }), [], []);
  const [adding, setAdding] = useState(false);
  const [shown, setShown] = useState<string | null>(null);
  const [deleting, setDeleting] = useState<string | null>(null);
  const act = async (what: () => Promise<unknown>, done: string) => {
    try {
      await what();
      notify(done);
      hooks.reload();
    } catch (err) {
      notify((err as ApiError).message);
    }
  };
  return (
    <>
      <PageHeader title="Alerts" subtitle="Where Makina tells your team of machines that drop, runtimes that fail, budgets nearly spent and errors that jump.">
        {!adding && (
          <button type="button" class="button primary" onClick={() => setAdding(true)}>
            Add webhook
          </button>
        )}
      </PageHeader>
      {adding && (
        <AlertForm
          onClose={() => {
            setAdding(false);
            hooks.reload();
          }}
        />
      )}
      {hooks.error && <Notice tone="error">{hooks.error.message}</Notice>}
      {hooks.data && hooks.data.data.length === 0 && !adding && (
        <EmptyState title="No alerts yet">
          <p>Add a webhook: a Slack incoming webhook's URL works as it is; other receivers can check each message's signature.</p>
        </EmptyState>
      )}
      {hooks.data && hooks.data.data.length > 0 && (
        <DataTable<AlertWebhook>
          label="Webhooks"
          testId="alerts"
          rows={hooks.data.data}
          rowKey={(w) => w.id}
          columns={[
            { header: "Webhook", cell: (w) => <><strong>{w.name ?? "unnamed"}</strong><div class="muted small mono">{w.url.replace(/\?.*$/, "?…")}</div></> },
            { header: "Events", class: "small", cell: (w) => w.events.map((e) => EVENTS.find(([k]) => k === e)?.[1] ?? e).join("; ") },
            { header: "Added", class: "small muted", cell: (w) => formatAgo(w.created_at) },
            {
              header: "Actions",
              hideHeader: true,
              class: "nowrap",
              cell: (w) =>
                deleting === w.id ? (
                  <ConfirmBar question="Delete this webhook?" button="Delete webhook" onConfirm={() => void act(() => client.call("DELETE /admin/v1/alerts/:id", { params: { id: w.id } }), "Webhook deleted.").then(() => setDeleting(null))} onKeep={() => setDeleting(null)} />
                ) : (
                  <>
                    <button type="button" class="button small secondary" onClick={() => void act(() => client.call("POST /admin/v1/alerts/:id/test", { params: { id: w.id } }), "A test event is on its way.").then(() => setShown(w.id))}>
                      Send test
                    </button>{" "}
                    <button type="button" class="button small secondary" aria-expanded={shown === w.id} onClick={() => setShown(shown === w.id ? null : w.id)}>
                      Deliveries
                    </button>{" "}
                    <button type="button" class="button small secondary" onClick={() => setDeleting(w.id)}>
                      Delete…
                    </button>
                  </>
                ),
            },
          ]}
        />
      )}
      {shown && <Deliveries id={shown} />}
    </>
  );
}

/** A webhook's last deliveries, read again every few seconds. */
function Deliveries({ id }: { id: string }) {
  const { client } = useApp();
  const list = useLive(() => client.call("GET /admin/v1/alerts/:id/deliveries", { params: { id }, query: { per_page: 20 } }), [], [id]);
  useRefresh(list.reload, { ms: 2000 });
  return (
    <section class="card" aria-labelledby="deliveries-title" data-testid="deliveries">
      <h2 id="deliveries-title">Deliveries</h2>
      {list.data && list.data.data.length === 0 && <p class="muted">None yet.</p>}
      {list.data && list.data.data.length > 0 && (
        <DataTable
          label="Deliveries"
          flat
          rows={list.data.data}
          rowKey={(d) => d.id}
          columns={[
            { header: "When", class: "small muted", cell: (d) => formatAgo(d.created_at) },
            { header: "Event", class: "small", cell: (d) => d.event_type },
            { header: "State", cell: (d) => <span class={`badge ${d.state === "delivered" ? "good" : d.state === "failed" ? "bad" : "wait"}`}>{d.state}</span> },
            { header: "Tries", class: "small", cell: (d) => d.attempts },
            { header: "Last answer", class: "small", cell: (d) => d.last_error ?? (d.last_status === null ? "-" : String(d.last_status)) },
          ]}
        />
      )}
    </section>
  );
}

/** Adds a webhook; its secret is shown once. */
function AlertForm({ onClose }: { onClose: () => void }) {
  const { client, session } = useApp();
  const [url, setUrl] = useState("");
  const [name, setName] = useState("");
  const [events, setEvents] = useState<string[]>(["machine.offline", "runtime.failed"]);
  const [offline, setOffline] = useState("300");
  const [errorRate, setErrorRate] = useState("10");
  const [error, setError] = useState<ApiError | null>(null);
  const [busy, setBusy] = useState(false);
  const [secret, setSecret] = useState<string | null>(null);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const made = await client.call("POST /admin/v1/alerts", { body: { org: session.org.id, url: url.trim(), name: name.trim() || null, events, machine_offline_after_s: Number(offline), error_rate_percent: Number(errorRate) } });
      setSecret(made.secret);
    } catch (err) {
      setError(err as ApiError);
    } finally {
      setBusy(false);
    }
  };
  if (secret) {
    return <NewSecret id="new-alert-title" title="Webhook added: its signing secret" secret={secret} testId="new-alert" onDone={onClose} note="Copy it now if your receiver checks signatures (Standard Webhooks); it is shown this once. Slack needs none." copyLabel="Copy secret" />;
  }
  const err = (param: string) => (error?.param === param ? error.message : null);
  return (
    <section class="card panel" aria-labelledby="alert-form-title" data-testid="add-alert">
      <h2 id="alert-form-title">Add a webhook</h2>
      <form onSubmit={submit} noValidate>
        {error && !["url", "name", "events", "machine_offline_after_s", "error_rate_percent"].includes(error.param ?? "") && <Notice tone="error">{error.message}</Notice>}
        <Field id="alert-url" label="URL" hint="https. A Slack incoming webhook's URL works as it is." error={err("url")}>
          <input id="alert-url" type="url" value={url} onInput={(e) => setUrl(e.currentTarget.value)} aria-describedby={describedBy("alert-url", err("url"))} />
        </Field>
        <Field id="alert-name" label="Name" hint="Who it reaches, e.g. #ops." error={err("name")}>
          <input id="alert-name" value={name} onInput={(e) => setName(e.currentTarget.value)} aria-describedby={describedBy("alert-name", err("name"))} />
        </Field>
        <fieldset class="field alert-events">
          <legend>Events</legend>
          {EVENTS.map(([key, label]) => (
            <label key={key} class="check-row">
              <input type="checkbox" checked={events.includes(key)} onChange={(e) => setEvents(e.currentTarget.checked ? [...events, key] : events.filter((x) => x !== key))} /> {label}
            </label>
          ))}
          {err("events") && <p class="field-error" role="alert">{err("events")}</p>}
        </fieldset>
        {/* The thresholds of the events chosen. */}
        <div class="row">
          {events.includes("machine.offline") && (
            <Field id="alert-offline" label="A machine counts as gone after (seconds)" hint="5 to 86,400." error={err("machine_offline_after_s")}>
              <input id="alert-offline" type="number" min="5" step="1" value={offline} onInput={(e) => setOffline(e.currentTarget.value)} aria-describedby={describedBy("alert-offline", err("machine_offline_after_s"))} />
            </Field>
          )}
          {events.includes("error_rate") && (
            <Field id="alert-error-rate" label="Too many failures (percent of requests)" hint="Over 5 minutes, with 20 requests or more." error={err("error_rate_percent")}>
              <input id="alert-error-rate" type="number" min="1" max="100" step="1" value={errorRate} onInput={(e) => setErrorRate(e.currentTarget.value)} aria-describedby={describedBy("alert-error-rate", err("error_rate_percent"))} />
            </Field>
          )}
        </div>
        <FormActions label="Add webhook" busyLabel="Adding…" busy={busy} onCancel={onClose} />
      </form>
    </section>
  );
}
