import { useState } from "preact/hooks";
import type { ApiError } from "../../api/admin-client.js";
import { useLive } from "../../api/use-live.js";
import { useApp, useIsAdmin } from "../../app-context.js";
import { DataTable, NameCell } from "../../components/data-table.js";
import { formatAgo, plural } from "../../components/format.js";
import { EmptyState, Notice, PageHeader } from "../../components/notice.js";
import { StateBadge } from "../../components/state-badge.js";
import { DefaultLimits, limitsText } from "./default-limits.js";
import { KeyForm } from "./key-form.js";

/** API keys without their secrets: restrictions, limits, expiry, use; create, edit and revoke. */
export function KeysPage() {
  const { client, session } = useApp();
  const isAdmin = useIsAdmin();
  const keys = useLive(() => client.call("GET /admin/v1/keys").then((l) => l.data), ["key"], []);
  const stacks = useLive(() => client.call("GET /admin/v1/stacks").then((l) => l.data), ["stack"], []);
  const machines = useLive(() => client.call("GET /admin/v1/machines").then((l) => l.data), ["machine"], []);
  const org = useLive(() => client.call("GET /admin/v1/orgs").then((l) => l.data.find((o) => o.id === session.org.id)), ["key"], []);
  const [creating, setCreating] = useState(false);
  const [editing, setEditing] = useState<string | null>(null);
  const [confirming, setConfirming] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const stackName = (id: string) => stacks.data?.find((s) => s.id === id)?.name ?? id;
  const machineName = (id: string) => machines.data?.find((m) => m.id === id)?.name ?? id;

  const revoke = async (id: string) => {
    setError(null);
    try {
      await client.call("POST /admin/v1/keys/:id/revoke", { params: { id } });
      setConfirming(null);
      keys.reload();
    } catch (err) {
      setError((err as ApiError).message);
    }
  };
  const list = keys.data ?? [];
  const mayChange = (k: (typeof list)[number]) => k.state !== "revoked" && (isAdmin || k.created_by === session.user.id);
  return (
    <>
      <PageHeader title="API keys" subtitle="Apps call the gateway with these keys as bearer tokens. A revoked key is refused from its next request on.">
        {!creating && (
          <button type="button" class="button primary" onClick={() => setCreating(true)}>
            Create key
          </button>
        )}
      </PageHeader>
      {creating && <KeyForm stacks={stacks.data ?? []} machines={machines.data ?? []} onClose={() => setCreating(false)} />}
      {editing && list.some((k) => k.id === editing) && (
        <KeyForm
          key={editing}
          stacks={stacks.data ?? []}
          machines={machines.data ?? []}
          editing={list.find((k) => k.id === editing)}
          onClose={() => {
            setEditing(null);
            keys.reload();
          }}
        />
      )}
      {(error || keys.error) && <Notice tone="error">{error ?? keys.error?.message}</Notice>}
      {keys.data && list.length === 0 && !creating && (
        <EmptyState title="No API keys yet">
          <p>Create a key, then call the gateway with it from any OpenAI client.</p>
        </EmptyState>
      )}
      {list.length > 0 && (
        <DataTable
          label="API keys"
          rows={list}
          rowKey={(k) => k.id}
          rowTestId={(k) => `key-row-${k.id}`}
          rowClass={(k) => (k.state === "active" ? "" : "dim")}
          columns={[
            { header: "Name", cell: (k) => <NameCell name={k.name ?? <span class="muted">unnamed</span>} id={`${k.prefix}…`} /> },
            { header: "State", cell: (k) => <StateBadge state={k.state} /> },
            {
              header: "Restrictions",
              class: "small",
              cell: (k) => (
                <>
                  {k.stack_ids ? `stacks: ${k.stack_ids.map(stackName).join(", ")}` : "all stacks"}
                  <br />
                  {k.machine_ids ? `machines: ${k.machine_ids.map(machineName).join(", ")}` : "any machine"}
                </>
              ),
            },
            {
              header: "Limits",
              class: "small",
              cell: (k) => (
                <>
                  {limitsText(k.rpm, k.tpm)}
                  {((!k.rpm && org.data?.default_key_rpm) || (!k.tpm && org.data?.default_key_tpm)) && (
                    <div class="muted">with the defaults: {limitsText(k.rpm ?? org.data?.default_key_rpm, k.tpm ?? org.data?.default_key_tpm)}</div>
                  )}
                </>
              ),
            },
            {
              header: "Last 24 h",
              class: "small nowrap",
              testId: (k) => `key-usage-${k.id}`,
              cell: (k) => (
                <>
                  {plural(k.requests_24h, "request")}
                  <br />
                  {plural(k.tokens_24h, "token")}
                </>
              ),
            },
            {
              header: "Created · last used",
              class: "small muted",
              cell: (k) => (
                <>
                  {formatAgo(k.created_at)}
                  <br />
                  {k.state === "revoked" ? `revoked ${formatAgo(k.revoked_at)}` : `used ${formatAgo(k.last_used_at)}`}
                  {k.state !== "revoked" && k.expires_at !== null && (
                    <>
                      <br />
                      <span data-testid={`key-expiry-${k.id}`}>
                        {k.state === "expired" ? "expired" : "expires"} {new Date(k.expires_at).toLocaleDateString()}
                      </span>
                    </>
                  )}
                </>
              ),
            },
            {
              header: "Actions",
              hideHeader: true,
              class: "row-actions",
              cell: (k) =>
                mayChange(k) &&
                (confirming === k.id ? (
                  <span class="confirm" role="group" aria-label={`Revoke ${k.name ?? k.prefix}?`}>
                    <span>Revoke? Apps using it stop working.</span>
                    <button type="button" class="button small danger" onClick={() => revoke(k.id)}>
                      Revoke key
                    </button>
                    <button type="button" class="button small secondary" onClick={() => setConfirming(null)}>
                      Keep
                    </button>
                  </span>
                ) : (
                  <span class="row-buttons">
                    <button
                      type="button"
                      class="button small secondary"
                      aria-label={`Edit ${k.name ?? k.prefix}`}
                      onClick={() => {
                        setCreating(false);
                        setEditing(k.id);
                      }}
                    >
                      Edit
                    </button>
                    <button type="button" class="button small secondary" onClick={() => setConfirming(k.id)}>
                      Revoke…
                    </button>
                  </span>
                )),
            },
          ]}
        />
      )}
      <DefaultLimits org={org.data} onSaved={() => org.reload()} />
    </>
  );
}
