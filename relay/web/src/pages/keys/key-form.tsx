import { useState } from "preact/hooks";
import type { ApiError } from "../../api/admin-client.js";
import type { ApiKey, MachineChoice, NewApiKey, StackChoice } from "../../api/types.js";
import { useApp, useIsAdmin } from "../../app-context.js";
import { describedBy, Field } from "../../components/field.js";
import { plural } from "../../components/format.js";
import { MultiSelect } from "../../components/multi-select.js";
import { Notice } from "../../components/notice.js";
import { FormActions } from "../../components/form-actions.js";
import { NewSecret } from "./new-secret.js";
import { useEscape } from "../../components/use-escape.js";
import { BudgetFields, budgetOf, typedBudget } from "../../components/budget.js";

/** `YYYY-MM-DD` of a time, in the browser's time zone (what a date input shows). */
function localDate(ms: number): string {
  const d = new Date(ms);
  return `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, "0")}-${String(d.getDate()).padStart(2, "0")}`;
}

/** What is wrong with a limit as typed (a whole number of 1 or more, or empty for none); null when nothing is. */
function wholeOrNone(typed: string, what: string): string | null {
  const t = typed.trim();
  return t === "" || (/^\d+$/.test(t) && Number(t) >= 1) ? null : `${what} must be a whole number of 1 or more, or empty for none.`;
}

/** The end of a `YYYY-MM-DD` day in the browser's time zone, as an ISO time; null when empty. */
function endOfDay(date: string): string | null {
  return date === "" ? null : new Date(`${date}T23:59:59.999`).toISOString();
}

/** What each tier means for the key's requests, said under the choice. */
const TIER_HINTS: Record<ApiKey["service_tier"], string> = {
  priority: "Its requests go first (admins give it).",
  default: "After priority requests.",
  flex: "Last; may wait up to 10 minutes.",
};

/**
 * Creates a key (with optional stack and machine restrictions, limits and an expiry; the secret is shown once),
 * or, given `editing`, changes one: its name, restrictions, limits and expiry, from the next request on.
 */
export function KeyForm({ stacks, machines, editing, onClose }: { stacks: StackChoice[]; machines: MachineChoice[]; editing?: ApiKey; onClose: () => void }) {
  const { client, session, notify } = useApp();
  const [name, setName] = useState(editing?.name ?? "");
  const [stackIds, setStackIds] = useState<string[]>(editing?.stack_ids ?? []);
  const [machineIds, setMachineIds] = useState<string[]>(editing?.machine_ids ?? []);
  const [rpm, setRpm] = useState(editing?.rpm ? String(editing.rpm) : "");
  const [tpm, setTpm] = useState(editing?.tpm ? String(editing.tpm) : "");
  const [expires, setExpires] = useState(editing?.expires_at ? localDate(editing.expires_at) : "");
  const [tier, setTier] = useState<ApiKey["service_tier"]>(editing?.service_tier ?? "default");
  const isAdmin = useIsAdmin();
  const [budget, setBudget] = useState(typedBudget(editing?.budget));
  const [error, setError] = useState<ApiError | null>(null);
  const [created, setCreated] = useState<NewApiKey | null>(null);
  const [busy, setBusy] = useState(false);
  const limit = (v: string) => (v.trim() === "" ? null : Number(v));
  const verb = editing ? "Save changes" : "Create key";
  /** The limits as typed, each judged on its own before the relay is asked: every wrong one is said at once. */
  const [typed, setTyped] = useState<{ rpm: string | null; tpm: string | null }>({ rpm: null, tpm: null });
  // Escape closes the form (not while it is being sent); the new key's panel stays until Done, its secret copied.
  useEscape(onClose, !busy && !created);

  const submit = async (e: Event) => {
    e.preventDefault();
    const judged = { rpm: wholeOrNone(rpm, "Requests per minute"), tpm: wholeOrNone(tpm, "Tokens per minute") };
    setTyped(judged);
    if (judged.rpm || judged.tpm) return;
    setBusy(true);
    setError(null);
    // A day left as it was keeps the key's expiry as it is (set to the minute by the API, or already past).
    const sameDay = editing && expires === (editing.expires_at ? localDate(editing.expires_at) : "");
    const fields = { name: name.trim() || null, stacks: stackIds.length ? stackIds : null, machines: machineIds.length ? machineIds : null, rpm: limit(rpm), tpm: limit(tpm), expires_at: sameDay ? undefined : endOfDay(expires), service_tier: tier, budget: budgetOf(budget) };
    try {
      if (editing) {
        const saved = await client.call("PATCH /admin/v1/keys/:id", { params: { id: editing.id }, body: fields });
        notify(`Key ${saved.name ?? saved.prefix} saved: the changes hold from its next request.`);
        onClose();
      } else {
        setCreated(await client.call("POST /admin/v1/keys", { body: { org: session.org.id, ...fields } }));
      }
    } catch (err) {
      setError(err as ApiError);
    } finally {
      setBusy(false);
    }
  };

  if (created?.key) {
    return <NewSecret id="new-key-title" title={`Your new key${created.name ? `: ${created.name}` : ""}`} secret={created.key} testId="new-key" onDone={onClose} />;
  }
  const err = (param: string) => (param === "rpm" || param === "tpm" ? typed[param] : null) ?? (error?.param === param ? error.message : null);
  const title = editing ? `Edit key ${editing.name ?? `${editing.prefix}…`}` : "Create an API key";
  return (
    <section class="card panel" aria-labelledby="key-form-title" data-testid={editing ? "edit-key" : "create-key"}>
      <h2 id="key-form-title">{title}</h2>
      {editing && <p class="muted small">Changes hold from the key's next request. Its secret stays the same.</p>}
      <form onSubmit={submit} noValidate>
        {error && !["name", "rpm", "tpm", "stacks", "machines", "machine", "expires_at", "service_tier", "budget"].includes(error.param ?? "") && <Notice tone="error">{error.message}</Notice>}
        <Field id="key-name" label="Name" hint="What uses it, e.g. support-bot." error={err("name")}>
          <input id="key-name" value={name} onInput={(e) => setName(e.currentTarget.value)} aria-describedby={describedBy("key-name", err("name"))} />
        </Field>
        <div class="row">
          <MultiSelect
            id="key-stacks"
            legend="Only these stacks"
            noun="stacks"
            one="stack"
            choices={stacks.map((s) => ({ id: s.id, label: s.name, detail: s.model_id }))}
            value={stackIds}
            onChange={setStackIds}
            error={err("stacks")}
            hint={stackIds.length ? `The key calls only the ${plural(stackIds.length, "stack")} chosen.` : "None chosen: every stack of the organization."}
          />
          <MultiSelect
            id="key-machines"
            legend="Only these machines"
            noun="machines"
            one="machine"
            choices={machines.filter((m) => !m.revoked || machineIds.includes(m.id)).map((m) => ({ id: m.id, label: m.name }))}
            value={machineIds}
            onChange={setMachineIds}
            error={err("machines") ?? err("machine")}
            hint={machineIds.length ? `The key is served only by the ${plural(machineIds.length, "machine")} chosen.` : "None chosen: any machine."}
          />
        </div>
        <div class="row">
          <Field id="key-rpm" label="Requests per minute" hint="Empty: no limit." error={err("rpm")}>
            <input id="key-rpm" type="number" min="1" step="1" inputMode="numeric" value={rpm} onInput={(e) => setRpm(e.currentTarget.value)} aria-describedby={describedBy("key-rpm", err("rpm"))} />
          </Field>
          <Field id="key-tpm" label="Tokens per minute" hint="Empty: no limit." error={err("tpm")}>
            <input id="key-tpm" type="number" min="1" step="1" inputMode="numeric" value={tpm} onInput={(e) => setTpm(e.currentTarget.value)} aria-describedby={describedBy("key-tpm", err("tpm"))} />
          </Field>
          <Field id="key-tier" label="Service tier" hint={TIER_HINTS[tier]} error={err("service_tier")}>
            <select id="key-tier" value={tier} onChange={(e) => setTier(e.currentTarget.value as ApiKey["service_tier"])} aria-describedby={describedBy("key-tier", err("service_tier"))}>
              {/* Only admins give a key priority; a member's key an admin gave it keeps it. */}
              <option value="priority" disabled={!isAdmin && editing?.service_tier !== "priority"} title="Admins give it">
                Priority
              </option>
              <option value="default">Default</option>
              <option value="flex">Flex</option>
            </select>
          </Field>
          <Field id="key-expires" label="Expires" hint="Works until the end of this day (your time). Empty: never." error={err("expires_at")}>
            <input id="key-expires" type="date" min={localDate(Date.now())} value={expires} onInput={(e) => setExpires(e.currentTarget.value)} aria-describedby={describedBy("key-expires", err("expires_at"))} />
          </Field>
        </div>
        <div class="row">
          {/* Only admins set a key's budget: a member's key keeps the one an admin gave it. */}
          <BudgetFields id="key-budget" value={budget} onChange={setBudget} error={err("budget") ?? err("budget.tokens") ?? err("budget.period")} disabled={!isAdmin} />
        </div>
        <FormActions label={verb} busyLabel={editing ? "Saving…" : "Creating…"} busy={busy} onCancel={onClose} />
      </form>
    </section>
  );
}
