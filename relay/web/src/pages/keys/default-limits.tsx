import { useState } from "preact/hooks";
import type { ApiError } from "../../api/admin-client.js";
import type { Org } from "../../api/types.js";
import { useApp, useIsAdmin } from "../../app-context.js";
import { describedBy, Field } from "../../components/field.js";
import { FormActions } from "../../components/form-actions.js";
import { BudgetFields, BudgetMeter, budgetOf, typedBudget } from "../../components/budget.js";

/** "100 RPM · 20000 TPM", or "none". */
export function limitsText(rpm: number | null | undefined, tpm: number | null | undefined): string {
  return [rpm ? `${rpm} RPM` : "", tpm ? `${tpm} TPM` : ""].filter(Boolean).join(" · ") || "none";
}

/**
 * The organization's default key limits (what keys that set no limit of their own get) and its token budget
 * (what all its keys share). Everyone sees them; admins change them (from the next request on).
 */
export function DefaultLimits({ org, onSaved }: { org: Org | undefined; onSaved: () => void }) {
  const { client, session, notify } = useApp();
  const isAdmin = useIsAdmin();
  const [editing, setEditing] = useState(false);
  const [rpm, setRpm] = useState("");
  const [tpm, setTpm] = useState("");
  const [budget, setBudget] = useState(typedBudget(null));
  const [error, setError] = useState<ApiError | null>(null);
  const [busy, setBusy] = useState(false);
  if (!org) return null;
  const open = () => {
    setRpm(org.default_key_rpm ? String(org.default_key_rpm) : "");
    setTpm(org.default_key_tpm ? String(org.default_key_tpm) : "");
    setBudget(typedBudget(org.budget));
    setError(null);
    setEditing(true);
  };
  const number = (v: string) => (v.trim() === "" ? null : Number(v));
  const save = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await client.call("PATCH /admin/v1/orgs/:org", { params: { org: session.org.id }, body: { default_key_rpm: number(rpm), default_key_tpm: number(tpm), budget: budgetOf(budget) } });
      setEditing(false);
      notify("Limits saved: they hold from each key's next request.");
      onSaved();
    } catch (err) {
      setError(err as ApiError);
    } finally {
      setBusy(false);
    }
  };
  const err = (param: string) => (error?.param === param ? error.message : null);
  return (
    <section class={editing ? "card panel" : "card"} aria-labelledby="default-limits-title" data-testid="default-limits">
      <h2 id="default-limits-title">Default limits and budget</h2>
      {!editing ? (
        <>
        <p class={org.budget ? undefined : "flush"}>
          Keys that set no limit of their own get: <strong data-testid="default-limits-value">{limitsText(org.default_key_rpm, org.default_key_tpm)}</strong>.{" "}
          {isAdmin && (
            <button type="button" class="button small secondary" onClick={open}>
              Change…
            </button>
          )}
        </p>
        {org.budget ? (
          <div class="flush">
            All the organization's keys together: <BudgetMeter budget={org.budget} spent={org.budget_spent} testId="org-budget" />
          </div>
        ) : null}
        </>
      ) : (
        <form onSubmit={save} noValidate>
          <div class="row">
            <Field id="default-rpm" label="Requests per minute" hint="Empty: no limit." error={err("default_key_rpm")}>
              <input id="default-rpm" type="number" min="1" step="1" inputMode="numeric" value={rpm} onInput={(e) => setRpm(e.currentTarget.value)} aria-describedby={describedBy("default-rpm", err("default_key_rpm"))} />
            </Field>
            <Field id="default-tpm" label="Tokens per minute" hint="Empty: no limit." error={err("default_key_tpm")}>
              <input id="default-tpm" type="number" min="1" step="1" inputMode="numeric" value={tpm} onInput={(e) => setTpm(e.currentTarget.value)} aria-describedby={describedBy("default-tpm", err("default_key_tpm"))} />
            </Field>
          </div>
          <div class="row">
            <BudgetFields id="org-budget" value={budget} onChange={setBudget} error={err("budget") ?? err("budget.tokens") ?? err("budget.period")} />
          </div>
          <FormActions label="Save defaults" busyLabel="Saving…" busy={busy} onCancel={() => setEditing(false)} />
        </form>
      )}
    </section>
  );
}
