import { useState, useCallback } from "preact/hooks";
import type { ApiError } from "../../api/admin-client.js";
import type { Machine, MachineJoining, Stack } from "../../api/types.js";
import { useLive } from "../../api/use-live.js";
import { useApp, useIsAdmin } from "../../app-context.js";
import { LogTail } from "../../components/log-tail.js";
import { CopyButton } from "../../components/copy-button.js";
import { DataTable } from "../../components/data-table.js";
import { formatAgo, formatBytes } from "../../components/format.js";
import { ConfirmBar } from "../../components/confirm-bar.js";
import { Link } from "../../components/link.js";
import { Loading, NotLoaded, Notice, PageHeader } from "../../components/notice.js";
import { StateBadge } from "../../components/state-badge.js";
import { DeploymentProgress } from "../stacks/deployment-progress.js";
import { LiveFigures } from "../overview/live-figures.js";
import { InstallCommand } from "./add-machine.js";

/** One machine: its hardware, the stacks on it, and the live progress of what the relay asked of it. */
export function MachinePage({ id }: { id: string }) {
  const { client, navigate, notify } = useApp();
  const isAdmin = useIsAdmin();
  /** The breaking action waiting for its confirmation, if any. */
  const [confirming, setConfirming] = useState<"revoke" | "rotate-token" | "delete" | null>(null);
  const [renaming, setRenaming] = useState<string | null>(null);
  const [rotated, setRotated] = useState<MachineJoining | null>(null);
  const [actionError, setActionError] = useState<string | null>(null);
  const machine = useLive(() => client.call("GET /admin/v1/machines/:id", { params: { id } }), ["machine"], [id], (e) => e.event === "machine" && e.data.machine_id === id);
  const stacks = useLive(() => client.call("GET /admin/v1/stacks", { query: { machine: id, per_page: 1000 } }).then((l) => l.data), ["stack"], [id]);
  const readLog = useCallback((after: number) => client.call("GET /admin/v1/machines/:id/log", { params: { id }, query: { after } }), [client, id]);
  if (machine.error && !machine.data) return <NotLoaded thing="machine" error={machine.error} back="/machines" />;
  const m = machine.data;
  if (!m) return <Loading thing="machine" />;
  const h = m.hardware;
  const onMachine = stacks.data ?? [];
  const act = async (action: "revoke" | "rotate-token" | "delete") => {
    setActionError(null);
    try {
      if (action === "rotate-token") {
        setRotated(await client.call("POST /admin/v1/machines/:id/rotate-token", { params: { id: m.id } }));
        notify(`${m.name} has a new token; the old one no longer works.`);
      } else if (action === "revoke") {
        await client.call("POST /admin/v1/machines/:id/revoke", { params: { id: m.id } });
        notify(`${m.name} is revoked.`);
      } else {
        await client.call("DELETE /admin/v1/machines/:id", { params: { id: m.id } });
        notify(`${m.name} is deleted.`);
        navigate("/machines");
        return;
      }
      setConfirming(null);
      machine.reload();
    } catch (err) {
      setActionError((err as ApiError).message);
    }
  };
  const rename = async (e: Event) => {
    e.preventDefault();
    setActionError(null);
    try {
      const renamed = await client.call("PATCH /admin/v1/machines/:id", { params: { id: m.id }, body: { name: (renaming ?? "").trim() } });
      notify(`Renamed to ${renamed.name}.`);
      setRenaming(null);
      machine.reload();
    } catch (err) {
      setActionError((err as ApiError).message);
    }
  };
  /** What each breaking action says before it is done, and the button that does it. */
  const CONFIRM = {
    "rotate-token": { question: "Rotate the token? The machine's link drops now, and it stays offline until it is given the new token.", button: "Rotate token" },
    revoke: { question: "Revoke? Its link drops now and it can never connect again.", button: "Revoke machine" },
    delete: { question: "Delete this machine for good? Its name and history go with it.", button: "Delete machine" },
  } as const;
  const deletable = m.revoked_at !== null || m.state === "pending";
  return (
    <>
      <PageHeader
        title={m.name}
        subtitle={
          <>
            {m.revoked_at ? <StateBadge state="revoked" /> : <StateBadge state={m.state} />} <span class="mono">{m.id}</span> · agent {m.agent_version ?? "not connected yet"} · {m.state === "online" ? "connected" : `last seen ${formatAgo(m.last_seen_at)}`}
          </>
        }
      >
        {isAdmin &&
          (confirming ? (
            <ConfirmBar {...CONFIRM[confirming]} onConfirm={() => act(confirming)} onKeep={() => setConfirming(null)} />
          ) : (
            <>
              <button type="button" class="button secondary" onClick={() => setRenaming(m.name)}>
                Rename…
              </button>
              {!m.revoked_at && (
                <>
                  <button type="button" class="button secondary" onClick={() => setConfirming("rotate-token")}>
                    Rotate token…
                  </button>
                  <button type="button" class="button secondary" onClick={() => setConfirming("revoke")}>
                    Revoke…
                  </button>
                </>
              )}
              {deletable && (
                <button type="button" class="button secondary danger-text" onClick={() => setConfirming("delete")}>
                  Delete…
                </button>
              )}
            </>
          ))}
      </PageHeader>
      {renaming !== null && (
        <form class="card panel rename-form" onSubmit={rename} aria-label="Rename machine">
          <label for="machine-name">New name</label>
          <input id="machine-name" value={renaming} onInput={(e) => setRenaming(e.currentTarget.value)} maxLength={100} />
          <button type="submit" class="button primary small">
            Save name
          </button>
          <button type="button" class="button secondary small" onClick={() => setRenaming(null)}>
            Cancel
          </button>
        </form>
      )}
      {actionError && <Notice tone="error">{actionError}</Notice>}
      {m.revoked_at && <Notice tone="warn">This machine is revoked: its token no longer works and its stacks get 503. Add the machine again to use it.</Notice>}
      {rotated && <NewToken rotated={rotated} onDone={() => setRotated(null)} />}
      {m.state === "pending" && <Notice tone="info">This machine has never connected. Run the install command shown when it was added; it appears online within seconds.</Notice>}
      {!m.revoked_at && m.state !== "pending" && <LiveFigures machine={m.id} />}
      <div class="grid two">
        <HardwareCard hardware={h} />
        <MachineStacks stacks={onMachine} />
      </div>
      <RuntimesCard inventory={m.inventory} onMachine={onMachine} />
      <ModelsCard inventory={m.inventory} onMachine={onMachine} />
      {isAdmin && !m.revoked_at && m.state !== "pending" && <LogTail key={m.id} title="Agent log" testId="machine-log" read={readLog} />}
    </>
  );
}

/** What the machine reported of its hardware. */
function HardwareCard({ hardware: h }: { hardware: Machine["hardware"] }) {
  return (
    <section class="card" aria-labelledby="hw-title">
      <h2 id="hw-title">Hardware</h2>
      {!h ? (
        <p class="muted">Reported when the machine first connects.</p>
      ) : (
        <dl class="values">
          <dt>System</dt>
          <dd>
            {h.os} ({h.platform}/{h.arch})
          </dd>
          <dt>CPU</dt>
          <dd>
            {h.cpu_model} · {h.cpu_physical_cores} cores, {h.cpu_logical_cores} threads
          </dd>
          <dt>Memory</dt>
          <dd>{formatBytes(h.memory_bytes)}</dd>
          <dt>GPUs</dt>
          <dd>
            {h.gpus.length === 0
              ? "none"
              : h.gpus.map((g, i) => (
                  <div key={i}>
                    {g.model} · {g.vram_bytes ? formatBytes(g.vram_bytes) : "VRAM unknown (driver not answering)"}
                    {g.driver_version ? ` · driver ${g.driver_version}` : ""}
                  </div>
                ))}
          </dd>
          <dt>Accelerators</dt>
          <dd>{h.accelerators.length ? h.accelerators.join(", ") : "none (CPU inference)"}</dd>
          <dt>Disks</dt>
          <dd>
            {h.disks.map((d) => (
              <div key={d.mount}>
                <span class="mono">{d.mount}</span> · {formatBytes(d.free_bytes)} free of {formatBytes(d.size_bytes)}
              </div>
            ))}
          </dd>
        </dl>
      )}
    </section>
  );
}

/** The stacks on the machine, each with its state and its deployment's progress. */
function MachineStacks({ stacks: onMachine }: { stacks: Stack[] }) {
  return (
    <section class="card" aria-labelledby="machine-stacks-title">
      <h2 id="machine-stacks-title">Stacks on this machine</h2>
      {onMachine.length === 0 ? (
        <p class="muted">
          None yet. <Link href="/forge">Build one in the Forge.</Link>
        </p>
      ) : (
        <ul class="stack-list">
          {onMachine.map((s) => (
            <li key={s.id}>
              <div class="stack-line">
                <Link href={`/stacks/${s.id}`}>{s.name}</Link> <StateBadge state={s.state} />
                <span class="muted">
                  {s.runtime}
                  {s.runtime_state ? ` · runtime ${s.runtime_state}` : ""} · <span class="mono">{s.model_id}</span>
                </span>
              </div>
              {s.runtime_error && <p class="field-error">{s.runtime_error}</p>}
              {s.deployment && <DeploymentProgress deployment={s.deployment} />}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

/** The runtimes the machine runs, as it reports them. */
function RuntimesCard({ inventory, onMachine }: { inventory: Machine["inventory"]; onMachine: Stack[] }) {
  return (
    <section class="card" aria-labelledby="runtimes-title">
      <h2 id="runtimes-title">Runtimes</h2>
      {!inventory ? (
        <p class="muted">Reported by the machine once it connects.</p>
      ) : inventory.runtimes.length === 0 ? (
        <p class="muted">No runtime runs here yet: deploy a stack to this machine.</p>
      ) : (
        <DataTable
          flat
          label="Runtimes"
          testId="machine-runtimes"
          rows={inventory.runtimes}
          rowKey={(r) => r.stack_id}
          columns={[
            {
              header: "Runtime",
              cell: (r) => (
                <>
                  {r.runtime}
                  <div class="muted small">{r.version}</div>
                </>
              ),
            },
            {
              header: "State",
              cell: (r) => (
                <>
                  <StateBadge state={r.state} />
                  {r.error && <p class="field-error">{r.error}</p>}
                </>
              ),
            },
            { header: "Model id", class: "mono", cell: (r) => r.model_id },
            { header: "Endpoint on the machine", class: "mono small wrap", cell: (r) => r.endpoint || "—" },
            { header: "Stack", cell: (r) => <Link href={`/stacks/${r.stack_id}`}>{onMachine.find((s) => s.id === r.stack_id)?.name ?? r.stack_id}</Link> },
          ]}
        />
      )}
    </section>
  );
}

/** The model files on the machine's disk, and which stacks use them. */
function ModelsCard({ inventory, onMachine }: { inventory: Machine["inventory"]; onMachine: Stack[] }) {
  return (
    <section class="card" aria-labelledby="models-title">
      <h2 id="models-title">Models on disk</h2>
      {!inventory || inventory.models.length === 0 ? (
        <p class="muted">{inventory ? "None yet: a deploy pulls its model here." : "Reported by the machine once it connects."}</p>
      ) : (
        <DataTable
          flat
          label="Models on disk"
          testId="machine-models"
          rows={inventory.models}
          rowKey={(f) => f.path}
          columns={[
            {
              header: "Name",
              cell: (f) => (
                <>
                  {f.name} <span class="muted small">{f.format}</span>
                </>
              ),
            },
            { header: "Size", class: "nowrap", cell: (f) => formatBytes(f.size_bytes) },
            { header: "SHA-256", class: "mono small", cell: (f) => <span title={f.sha256}>{f.sha256 ? `${f.sha256.slice(0, 12)}…` : "—"}</span> },
            { header: "Used by", cell: (f) => f.stack_ids.map((sid) => onMachine.find((s) => s.id === sid)?.name ?? sid).join(", ") || "—" },
            { header: "Path", class: "mono small wrap", cell: (f) => f.path },
          ]}
        />
      )}
    </section>
  );
}

/** A rotated token's install command, shown once. */
function NewToken({ rotated, onDone }: { rotated: MachineJoining; onDone: () => void }) {
  return (
    <section class="card panel" data-testid="rotated-token">
      <h2>New token for {rotated.name}</h2>
      <p>
        The old token stopped working and the machine's link dropped. Run the command below on the machine (it keeps the agent's other settings), or put
        the new token in its config.
      </p>
      <dl class="values">
        <dt>New machine token</dt>
        <dd>
          <code data-testid="rotated-token-value">{rotated.token}</code> <CopyButton text={rotated.token} />
        </dd>
      </dl>
      <InstallCommand joining={rotated} testId="rotated-install-command" />
      <button type="button" class="button secondary" onClick={onDone}>
        Done
      </button>
    </section>
  );
}
