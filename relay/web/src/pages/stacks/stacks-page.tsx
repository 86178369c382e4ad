import { useLive } from "../../api/use-live.js";
import { useApp, useIsAdmin } from "../../app-context.js";
import { DataTable, NameCell } from "../../components/data-table.js";
import { Link } from "../../components/link.js";
import { EmptyState, Notice, PageHeader } from "../../components/notice.js";
import { StateBadge, UnverifiedBadge } from "../../components/state-badge.js";

/** Every stack of the organization with its state, live. */
export function StacksPage() {
  const { client } = useApp();
  const isAdmin = useIsAdmin();
  const stacks = useLive(() => client.call("GET /admin/v1/stacks", { query: { per_page: 1000 } }).then((l) => l.data), ["stack"], []);
  const machines = useLive(() => client.call("GET /admin/v1/machines", { query: { per_page: 1000 } }).then((l) => l.data), ["machine"], []);
  const machineName = (id: string) => machines.data?.find((m) => m.id === id)?.name ?? id;
  const list = stacks.data ?? [];
  return (
    <>
      <PageHeader title="Stacks" subtitle="A stack is a model on a runtime on a machine, reachable through the API by its model id.">
        {isAdmin && (
          <Link href="/forge" class="button primary">
            New stack
          </Link>
        )}
      </PageHeader>
      {stacks.error && <Notice tone="error">{stacks.error.message}</Notice>}
      {stacks.data && list.length === 0 && (
        <EmptyState title="No stacks yet">
          <p>Build one in the Forge: pick a machine, a runtime and a model, then deploy it.</p>
          {isAdmin && (
            <Link href="/forge" class="button primary">
              Open the Forge
            </Link>
          )}
        </EmptyState>
      )}
      {list.length > 0 && (
        <DataTable
          label="Stacks"
          rows={list}
          rowKey={(s) => s.id}
          rowTestId={(s) => `stack-row-${s.id}`}
          columns={[
            { header: "Name", cell: (s) => <NameCell href={`/stacks/${s.id}`} name={s.name} id={s.id} /> },
            {
              header: "State",
              cell: (s) => (
                <>
                  <StateBadge state={s.state} />
                  {s.state === "deployed" && s.runtime_state && s.runtime_state !== "ready" && <StateBadge state={s.runtime_state} label={`runtime ${s.runtime_state}`} />}
                </>
              ),
            },
            {
              header: "Model id",
              class: "mono",
              cell: (s) => (
                <>
                  {s.has_endpoint ? s.model_id : <span class="muted">no endpoint</span>}
                  {s.model_unverified && <UnverifiedBadge />}
                </>
              ),
            },
            { header: "Runtime", cell: (s) => s.runtime },
            { header: "Machine", cell: (s) => machineName(s.machine_id) },
          ]}
        />
      )}
    </>
  );
}
