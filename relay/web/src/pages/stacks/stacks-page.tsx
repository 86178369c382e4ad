import type { AdminCheckedQuery } from "../../api/types.js";
import { useChoices } from "../../api/use-choices.js";
import { useLive } from "../../api/use-live.js";
import { useTableState } from "../../api/use-table-state.js";
import { useApp, useIsAdmin } from "../../app-context.js";
import { NameCell } from "../../components/data-table.js";
import { Link } from "../../components/link.js";
import { EmptyState, Notice, PageHeader } from "../../components/notice.js";
import { PagedTable } from "../../components/paged-table.js";
import { StateBadge, UnverifiedBadge } from "../../components/state-badge.js";
import { queryOf, toSearch } from "../../components/table-state.js";

type StackQuery = AdminCheckedQuery<"GET /admin/v1/stacks">;
/** What the stacks' table sorts by (the relay's `STACK_SORTS`). */
const STACK_SORTS = ["name", "state", "model_id", "runtime", "created_at", "deployed_at"] as const satisfies readonly NonNullable<StackQuery["sort"]>[];
/** The states a stack is filtered by, in words. */
const STACK_STATES = [
  ["deployed", "Deployed"],
  ["deploying", "Deploying"],
  ["failed", "Failed"],
  ["draft", "Not deployed"],
  ["undeploying", "Undeploying"],
] as const satisfies readonly (readonly [NonNullable<StackQuery["state"]>, string])[];

/** The organization's stacks, a page at a time, searched and sorted by the relay, their states live. */
export function StacksPage() {
  const { client } = useApp();
  const isAdmin = useIsAdmin();
  const [table, setTable] = useTableState(STACK_SORTS, STACK_STATES.map(([state]) => state));
  const page = useLive(() => client.call("GET /admin/v1/stacks", { query: queryOf(table) }), ["stack"], [toSearch(table)]);
  const { machineName } = useChoices();
  return (
    <>
      <PageHeader title="Stacks" subtitle="A stack is a model on a runtime on a machine, reachable through the API by its model id.">
        {isAdmin && (
          <Link href="/forge" class="button primary">
            New stack
          </Link>
        )}
      </PageHeader>
      {page.error && <Notice tone="error">{page.error.message}</Notice>}
      <PagedTable
        page={page}
        table={table}
        onTable={setTable}
        noun="stacks"
        one="stack"
        states={STACK_STATES}
        placeholder="Search by name, model id or model"
        empty={
          <EmptyState title="No stacks yet">
            <p>Build one in the Forge: pick a machine, a runtime and a model, then deploy it.</p>
            {isAdmin && (
              <Link href="/forge" class="button primary">
                Open the Forge
              </Link>
            )}
          </EmptyState>
        }
        label="Stacks"
        rowKey={(s) => s.id}
        rowTestId={(s) => `stack-row-${s.id}`}
        columns={[
          { header: "Name", sort: "name", cell: (s) => <NameCell href={`/stacks/${s.id}`} name={s.name} id={s.id} /> },
          {
            header: "State",
            sort: "state",
            cell: (s) => (
              <>
                <StateBadge state={s.state} />
                {s.state === "deployed" && s.runtime_state && s.runtime_state !== "ready" && (
                  <StateBadge state={s.residency === "on_demand" && s.runtime_state !== "failed" ? "idle" : s.runtime_state} label={s.residency === "on_demand" ? `on demand · ${s.runtime_state}` : `runtime ${s.runtime_state}`} />
                )}
              </>
            ),
          },
          {
            header: "Model id",
            sort: "model_id",
            class: "mono",
            cell: (s) => (
              <>
                {s.has_endpoint ? s.model_id : <span class="muted">no endpoint</span>}
                {s.model_unverified && <UnverifiedBadge />}
              </>
            ),
          },
          { header: "Runtime", sort: "runtime", cell: (s) => s.runtime },
          { header: "Machine", cell: (s) => machineName(s.machine_id) },
        ]}
      />
    </>
  );
}
