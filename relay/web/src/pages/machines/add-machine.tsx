import { useState } from "preact/hooks";
import { ApiError } from "../../api/admin-client.js";
import type { MachineJoining } from "../../api/types.js";
import { useLive } from "../../api/use-live.js";
import { useApp } from "../../app-context.js";
import { CopyBlock, CopyButton } from "../../components/copy-button.js";
import { describedBy, Field } from "../../components/field.js";
import { HardwareSummary } from "./hardware-summary.js";
import { StateBadge } from "../../components/state-badge.js";
import { Link } from "../../components/link.js";
import { FormActions } from "../../components/form-actions.js";
import { Notice } from "../../components/notice.js";
import { useEscape } from "../../components/use-escape.js";

/**
 * Adds a machine: names it, shows its install command and token once, and
 * waits on the same screen until the machine comes online (read again as the
 * relay announces its changes).
 */
export function AddMachine({ onClose }: { onClose: () => void }) {
  // Escape closes it, as Close does: a machine made can still connect later.
  useEscape(onClose);
  const { client, session } = useApp();
  const [name, setName] = useState("");
  const [error, setError] = useState<ApiError | null>(null);
  const [created, setCreated] = useState<MachineJoining | null>(null);
  const [busy, setBusy] = useState(false);
  const watched = useLive(
    () => (created ? client.call("GET /admin/v1/machines/:id", { params: { id: created.id } }) : Promise.resolve(undefined)),
    ["machine"],
    [created?.id],
    (e) => e.event === "machine" && e.data.machine_id === created?.id,
  );
  const live = watched.data;

  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      setCreated(await client.call("POST /admin/v1/machines", { body: { org: session.org.id, name: name.trim() } }));
    } catch (err) {
      setError(err as ApiError);
    } finally {
      setBusy(false);
    }
  };

  if (!created) {
    return (
      <section class="card panel" aria-labelledby="add-machine-title">
        <h2 id="add-machine-title">Add a machine</h2>
        <form onSubmit={submit} class="inline-form" noValidate>
          <Field id="machine-name" label="Name" error={error?.message} hint="How it shows in lists, e.g. gpu-box-1.">
            <input id="machine-name" value={name} onInput={(e) => setName(e.currentTarget.value)} aria-describedby={describedBy("machine-name", error?.message)} autoFocus />
          </Field>
          <FormActions label="Create machine" busyLabel="Creating…" busy={busy} onCancel={onClose} />
        </form>
      </section>
    );
  }

  const online = live?.state === "online";
  return (
    <section class="card panel" aria-labelledby="add-machine-title" data-testid="new-machine">
      <h2 id="add-machine-title">Install the agent on {created.name}</h2>
      <InstallCommand joining={created} />
      <dl class="values">
        <dt>Machine ID</dt>
        <dd>
          <code data-testid="new-machine-id">{created.id}</code> <CopyButton text={created.id} />
        </dd>
        <dt>Machine token</dt>
        <dd>
          <code data-testid="new-machine-token">{created.token}</code> <CopyButton text={created.token} />
        </dd>
        <dt>Relay address</dt>
        <dd>
          <code data-testid="new-machine-server">{created.server}</code> <CopyButton text={created.server} />
        </dd>
        {created.ca_sha256 && (
          <>
            <dt>Relay CA (SHA-256)</dt>
            <dd>
              <code data-testid="new-machine-ca">{created.ca_sha256}</code> <CopyButton text={created.ca_sha256} />
            </dd>
          </>
        )}
      </dl>
      <p class="hint">
        Or run the agent in the foreground:{" "}
        <code>
          makina agent --server {created.server} --machine-id {created.id}
          {created.ca_sha256 ? ` --ca-sha256 ${created.ca_sha256}` : ""} --token-file FILE
        </code>
      </p>
      <div class={`waiting ${online ? "done" : ""}`} role="status" aria-live="polite" data-testid="new-machine-status">
        {online ? (
          <>
            <StateBadge state="online" /> {created.name} is online. <HardwareSummary hardware={live?.hardware ?? null} />{" "}
            <Link href="/forge">Build a stack on it →</Link>
          </>
        ) : (
          <>
            <span class="spinner" aria-hidden="true" /> Waiting for {created.name} to connect… This page updates by itself.
          </>
        )}
      </div>
      <div class="form-actions">
        <button type="button" class="button secondary" onClick={onClose}>
          {online ? "Done" : "Close (the machine can connect later)"}
        </button>
      </div>
    </section>
  );
}

/** The install command and what it asks for, or why there is none; with the warnings of a relay on loopback. */
export function InstallCommand({ joining, testId = "install-command" }: { joining: MachineJoining; testId?: string }) {
  if (joining.install_command === null) {
    return (
      <Notice tone="warn" testId="install-refused">
        <strong>No install command.</strong> {joining.install_refused}
      </Notice>
    );
  }
  return (
    <>
      <p>
        Paste this on the machine (it needs Node.js 20.19 or newer and curl): it asks for the machine token below (so the token lands in no
        shell history), installs the agent from this relay, starts it as a service and waits until the machine is online. The token is shown{" "}
        <strong>this once</strong>: copy it now.
      </p>
      {joining.reach_warning && (
        <Notice tone="warn" testId="loopback-warning">
          <strong>This command works on this computer only.</strong> {joining.reach_warning}
        </Notice>
      )}
      <CopyBlock text={joining.install_command} label="Copy command" testId={testId} />
    </>
  );
}
