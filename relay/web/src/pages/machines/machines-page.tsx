import { useState } from "preact/hooks";
import type { List, Machine } from "../../api/types.js";
import { useLive } from "../../api/use-live.js";
import { useApp, useIsAdmin } from "../../app-context.js";
import { formatAgo } from "../../components/format.js";
import { Link } from "../../components/link.js";
import { EmptyState, Notice, PageHeader } from "../../components/notice.js";
import { StateBadge } from "../../components/state-badge.js";
import { AddMachine } from "./add-machine.js";
import { HardwareSummary } from "./hardware-summary.js";

/** Every machine of the organization, with its state updating live. */
export function MachinesPage() {
  const { client } = useApp();
  const isAdmin = useIsAdmin();
  const machines = useLive(() => client.get<List<Machine>>("/machines").then((l) => l.data), ["machine"], []);
  const [adding, setAdding] = useState(false);
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
        <div class="table-wrap">
          <table class="table" aria-label="Machines">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">State</th>
                <th scope="col">Hardware</th>
                <th scope="col">Agent</th>
                <th scope="col">Last seen</th>
              </tr>
            </thead>
            <tbody>
              {list.map((m) => (
                <tr key={m.id} data-testid={`machine-row-${m.id}`}>
                  <td>
                    <Link href={`/machines/${m.id}`}>{m.name}</Link>
                    <div class="muted mono small">{m.id}</div>
                  </td>
                  <td>
                    {m.revoked_at ? <StateBadge state="revoked" /> : <StateBadge state={m.state} />}
                  </td>
                  <td>
                    <HardwareSummary hardware={m.hardware} />
                  </td>
                  <td class="muted">{m.agent_version ?? "—"}</td>
                  <td class="muted">{m.state === "online" ? "now" : formatAgo(m.last_seen_at)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}
