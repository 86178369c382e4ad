import type { List, Machine, Stack } from "../../api/types.js";
import { useLive } from "../../api/use-live.js";
import { useApp, useIsAdmin } from "../../app-context.js";
import { Link } from "../../components/link.js";
import { EmptyState, Notice, PageHeader } from "../../components/notice.js";
import { StateBadge, UnverifiedBadge } from "../../components/state-badge.js";

/** Every stack of the organization with its state, live. */
export function StacksPage() {
  const { client } = useApp();
  const isAdmin = useIsAdmin();
  const stacks = useLive(() => client.get<List<Stack>>("/stacks").then((l) => l.data), ["stack"], []);
  const machines = useLive(() => client.get<List<Machine>>("/machines").then((l) => l.data), ["machine"], []);
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
        <div class="table-wrap">
          <table class="table" aria-label="Stacks">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">State</th>
                <th scope="col">Model id</th>
                <th scope="col">Runtime</th>
                <th scope="col">Machine</th>
              </tr>
            </thead>
            <tbody>
              {list.map((s) => (
                <tr key={s.id} data-testid={`stack-row-${s.id}`}>
                  <td>
                    <Link href={`/stacks/${s.id}`}>{s.name}</Link>
                    <div class="muted mono small">{s.id}</div>
                  </td>
                  <td>
                    <StateBadge state={s.state} />
                    {s.state === "deployed" && s.runtime_state && s.runtime_state !== "ready" && <StateBadge state={s.runtime_state} label={`runtime ${s.runtime_state}`} />}
                  </td>
                  <td class="mono">
                    {s.has_endpoint ? s.model_id : <span class="muted">no endpoint</span>}
                    {s.model_unverified && <UnverifiedBadge />}
                  </td>
                  <td>{s.runtime}</td>
                  <td>{machineName(s.machine_id)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}
