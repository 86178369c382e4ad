import { useState } from "preact/hooks";
import type { AdminCheckedQuery } from "../../api/types.js";
import { useLive } from "../../api/use-live.js";
import { useTableState } from "../../api/use-table-state.js";
import { useApp, useIsAdmin } from "../../app-context.js";
import { NameCell } from "../../components/data-table.js";
import { formatAgo } from "../../components/format.js";
import { EmptyState, Notice, PageHeader } from "../../components/notice.js";
import { PagedTable } from "../../components/paged-table.js";
import { StateBadge } from "../../components/state-badge.js";
import { queryOf, toSearch } from "../../components/table-state.js";
import { AddMachine } from "./add-machine.js";
import { HardwareSummary } from "./hardware-summary.js";

type MachineQuery = AdminCheckedQuery<"GET /admin/v1/machines">;
/** What the machines' table sorts by (the relay's `MACHINE_SORTS`). */
const MACHINE_SORTS = ["name", "state", "created_at", "last_seen_at"] as const satisfies readonly NonNullable<MachineQuery["sort"]>[];
/** The states a machine is filtered by, in words. */
const MACHINE_STATES = [
  ["online", "Online"],
  ["offline", "Offline"],
  ["pending", "Never connected"],
  ["revoked", "Revoked"],
] as const satisfies readonly (readonly [NonNullable<MachineQuery["state"]>, string])[];

/** The organization's machines, a page at a time, searched and sorted by the relay, their states updating live. */
export function MachinesPage() {
  const { client } = useApp();
  const isAdmin = useIsAdmin();
  const [table, setTable] = useTableState(MACHINE_SORTS, MACHINE_STATES.map(([state]) => state));
  const page = useLive(() => client.call("GET /admin/v1/machines", { query: queryOf(table) }), ["machine"], [toSearch(table)]);
  // The overview's "Add your first machine" comes here with `?add` to open the form at once.
  const [adding, setAdding] = useState(() => isAdmin && new URLSearchParams(location.search).has("add"));
  return (
    <>
      <PageHeader title="Machines" subtitle="Workers that serve your models. Each runs the Makina agent, which dials out to this relay.">
        {isAdmin && !adding && (
          <button type="button" class="button primary" onClick={() => setAdding(true)}>
            Add machine
          </button>
        )}
      </PageHeader>
      {adding && (
        <AddMachine
          onClose={() => {
            setAdding(false);
            page.reload();
          }}
        />
      )}
      {page.error && <Notice tone="error">{page.error.message}</Notice>}
      <PagedTable
        page={page}
        table={table}
        onTable={setTable}
        noun="machines"
        one="machine"
        states={MACHINE_STATES}
        placeholder="Search by name or id"
        hideEmpty={adding}
        empty={
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
        }
        label="Machines"
        rowKey={(m) => m.id}
        rowTestId={(m) => `machine-row-${m.id}`}
        rowClass={(m) => (m.revoked_at ? "dim" : "")}
        columns={[
          { header: "Name", sort: "name", cell: (m) => <NameCell href={`/machines/${m.id}`} name={m.name} id={m.id} /> },
          { header: "State", sort: "state", cell: (m) => (m.revoked_at ? <StateBadge state="revoked" /> : <StateBadge state={m.state} />) },
          { header: "Hardware", cell: (m) => <HardwareSummary hardware={m.hardware} /> },
          { header: "Agent", class: "muted", cell: (m) => m.agent_version ?? "—" },
          { header: "Last seen", sort: "last_seen_at", class: "muted", cell: (m) => (m.state === "online" ? "now" : formatAgo(m.last_seen_at)) },
        ]}
      />
    </>
  );
}
