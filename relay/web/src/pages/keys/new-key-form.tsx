import { useState } from "preact/hooks";
import type { ApiError } from "../../api/admin-client.js";
import type { Machine, NewApiKey, Stack } from "../../api/types.js";
import { useApp } from "../../app-context.js";
import { CopyBlock } from "../../components/copy-button.js";
import { describedBy, Field } from "../../components/field.js";
import { Notice } from "../../components/notice.js";
import { FormActions } from "../../components/form-actions.js";

/** Creates a key with optional stack and machine restrictions and limits; shows the secret once. */
export function NewKeyForm({ stacks, machines, onClose }: { stacks: Stack[]; machines: Machine[]; onClose: () => void }) {
  const { client, session } = useApp();
  const [name, setName] = useState("");
  const [stackIds, setStackIds] = useState<string[]>([]);
  const [machineIds, setMachineIds] = useState<string[]>([]);
  const [rpm, setRpm] = useState("");
  const [tpm, setTpm] = useState("");
  const [error, setError] = useState<ApiError | null>(null);
  const [created, setCreated] = useState<NewApiKey | null>(null);
  const [busy, setBusy] = useState(false);
  const toggle = (list: string[], id: string) => (list.includes(id) ? list.filter((x) => x !== id) : [...list, id]);
  const limit = (v: string) => (v.trim() === "" ? null : Number(v));

  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      setCreated(await client.call("POST /admin/v1/keys", { body: { org: session.org.id, name: name.trim() || null, stacks: stackIds, machines: machineIds, rpm: limit(rpm), tpm: limit(tpm) } }));
    } catch (err) {
      setError(err as ApiError);
    } finally {
      setBusy(false);
    }
  };

  if (created?.key) {
    return (
      <section class="card panel" aria-labelledby="new-key-title" data-testid="new-key">
        <h2 id="new-key-title">Your new key{created.name ? `: ${created.name}` : ""}</h2>
        <Notice tone="warn">Copy it now. It is shown this once; Makina keeps only its hash.</Notice>
        <CopyBlock text={created.key} label="Copy key" testId="new-key-secret" />
        <div class="form-actions">
          <button type="button" class="button primary" onClick={onClose}>
            Done
          </button>
        </div>
      </section>
    );
  }
  const err = (param: string) => (error?.param === param ? error.message : null);
  return (
    <section class="card panel" aria-labelledby="create-key-title">
      <h2 id="create-key-title">Create an API key</h2>
      <form onSubmit={submit} noValidate>
        {error && !["name", "rpm", "tpm", "stacks", "machines"].includes(error.param ?? "") && <Notice tone="error">{error.message}</Notice>}
        <Field id="key-name" label="Name" hint="What uses it, e.g. support-bot." error={err("name")}>
          <input id="key-name" value={name} onInput={(e) => setName(e.currentTarget.value)} aria-describedby={describedBy("key-name", err("name"))} />
        </Field>
        <div class="row">
          <fieldset class="restrict">
            <legend>Only these stacks</legend>
            {stacks.length === 0 && <p class="muted small">No stacks yet.</p>}
            {stacks.map((s) => (
              <label key={s.id} class="check-row">
                <input type="checkbox" checked={stackIds.includes(s.id)} onChange={() => setStackIds(toggle(stackIds, s.id))} /> {s.name} <span class="muted mono">{s.model_id}</span>
              </label>
            ))}
            {err("stacks") && <p class="field-error">{err("stacks")}</p>}
            <p class="hint">None ticked: every stack of the organization.</p>
          </fieldset>
          <fieldset class="restrict">
            <legend>Only these machines</legend>
            {machines.map((m) => (
              <label key={m.id} class="check-row">
                <input type="checkbox" checked={machineIds.includes(m.id)} onChange={() => setMachineIds(toggle(machineIds, m.id))} /> {m.name}
              </label>
            ))}
            {err("machines") && <p class="field-error">{err("machines")}</p>}
            <p class="hint">None ticked: any machine.</p>
          </fieldset>
        </div>
        <div class="row">
          <Field id="key-rpm" label="Requests per minute" hint="Empty: no limit." error={err("rpm")}>
            <input id="key-rpm" type="number" min="1" step="1" inputMode="numeric" value={rpm} onInput={(e) => setRpm(e.currentTarget.value)} aria-describedby={describedBy("key-rpm", err("rpm"))} />
          </Field>
          <Field id="key-tpm" label="Tokens per minute" hint="Empty: no limit." error={err("tpm")}>
            <input id="key-tpm" type="number" min="1" step="1" inputMode="numeric" value={tpm} onInput={(e) => setTpm(e.currentTarget.value)} aria-describedby={describedBy("key-tpm", err("tpm"))} />
          </Field>
        </div>
        <FormActions label="Create key" busyLabel="Creating…" busy={busy} onCancel={onClose} />
      </form>
    </section>
  );
}
