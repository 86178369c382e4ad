import { useState } from "preact/hooks";
import { useLive } from "../../api/use-live.js";
import { useApp, useIsAdmin } from "../../app-context.js";
import { DataTable, NameCell } from "../../components/data-table.js";
import { formatAgo } from "../../components/format.js";
import { EmptyState, Notice, PageHeader } from "../../components/notice.js";
import { StateBadge } from "../../components/state-badge.js";
import { AddMachine } from "./add-machine.js";
import { HardwareSummary } from "./hardware-summary.js";

/** Every machine of the organization, with its state updating live. */
export function MachinesPage() {
  const { client } = useApp();
  const isAdmin = useIsAdmin();
  const machines = useLive(() => client.call("GET /admin/v1/machines", { query: { per_page: 1000 } }).then((l) => l.data), ["machine"], []);
  // The overview's "Add your first machine" comes here with `?add` to open the form at once.
  const [adding, setAdding] = useState(() => isAdmin && new URLSearchParams(location.search).has("add"));
  const list = machines.data ?? [];
  return (
    <>
      <PageHeader title="Machines" subtitle="Workers that serve your models. Each runs the Makina agent, which dials out to this relay.">
        {isAdmin && !adding && (
          <button type="button" class="button primary" onClick={() => setAdding(true)}>
            Add machine
          </button>
        )}
      </PageHeader>
      {adding && <AddMachine machines={list} onClose={() => setAdding(false)} />}
      {machines.error && <Notice tone="error">{machines.error.message}</Notice>}
      {machines.data && list.length === 0 && !adding && (
        <EmptyState title="No machines yet">
          <p>Add a machine, run the command it shows on the machine, and it appears here within seconds.</p>
          {isAdmin ? (
            <button type="button" class="button primary" onClick={() => setAdding(true)}>
              Add your first machine
            </button>
          ) : (
            <p class="muted">Ask an admin of your organization to add one.</p>
          )}
        </EmptyState>
      )}
      {list.length > 0 && (
        <DataTable
          label="Machines"
          rows={list}
          rowKey={(m) => m.id}
          rowTestId={(m) => `machine-row-${m.id}`}
          columns={[
            { header: "Name", cell: (m) => <NameCell href={`/machines/${m.id}`} name={m.name} id={m.id} /> },
            { header: "State", cell: (m) => (m.revoked_at ? <StateBadge state="revoked" /> : <StateBadge state={m.state} />) },
            { header: "Hardware", cell: (m) => <HardwareSummary hardware={m.hardware} /> },
            { header: "Agent", class: "muted", cell: (m) => m.agent_version ?? "—" },
            { header: "Last seen", class: "muted", cell: (m) => (m.state === "online" ? "now" : formatAgo(m.last_seen_at)) },
          ]}
        />
      )}
    </>
  );
}
