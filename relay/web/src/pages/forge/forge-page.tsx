import { useEffect, useMemo, useState } from "preact/hooks";
import type { ApiError } from "../../api/admin-client.js";
import type { CatalogModel, Check, Stack } from "../../api/types.js";
import { useLive } from "../../api/use-live.js";
import { useApp, useIsAdmin } from "../../app-context.js";
import { ConfirmBar } from "../../components/confirm-bar.js";
import { Link } from "../../components/link.js";
import { EmptyState, Notice, PageHeader } from "../../components/notice.js";
import { useForm } from "../../components/use-form.js";
import { CompatibilityPanel, verdictOf } from "./compatibility-panel.js";
import { CONTEXT_RANGE, SIZED_CONTEXT } from "./context-bounds.js";
import { editedBody, stackBody } from "./forge-body.js";
import { EndpointFieldset, LayersFieldset, MachineFieldset, ModelFieldset, RuntimeFieldset } from "./forge-fieldsets.js";
import { useCompatibility } from "./use-compatibility.js";
import { useReplicas } from "./use-replicas.js";
import { FIELDS, FIELDS_OF_PARAM, fieldsOf, isPartOf, modelChosen, modelIdOf } from "./forge-fields.js";


/**
 * Builds a stack layer by layer, with a compatibility panel that answers every choice; or, given `editing`, changes
 * that stack (a deployed one is redeployed with what its machine builds on, and cannot change machine).
 */
export function ForgePage({ editing }: { editing?: Stack } = {}) {
  const { client, session, navigate, notify } = useApp();
  const isAdmin = useIsAdmin();
  const machines = useLive(() => client.call("GET /admin/v1/machines", { query: { per_page: 1000 } }).then((l) => l.data), ["machine"], []);
  const [catalog, setCatalog] = useState<CatalogModel[]>([]);
  const form = useForm(editing ? fieldsOf(editing) : FIELDS);
  /** A deployed (or deploying) stack stays on its machine: undeploy it to move it. */
  const pinnedMachine = editing !== undefined && editing.state !== "draft" && editing.state !== "failed";
  const { machine, runtime, choice, custom, harness, orchestrator, maxContext, endpoint, residency } = form.values;
  /** The last submit: what the relay refused, and the fields as they were then. */
  const [submitted, setSubmitted] = useState<{ error: ApiError | null; busy: boolean; values: typeof FIELDS | null }>({ error: null, busy: false, values: null });
  const { error, busy } = submitted;
  /** A save that restarts a deployed stack's runtime, waiting for its confirmation. */
  const [confirmingRestart, setConfirmingRestart] = useState(false);

  useEffect(() => {
    client.call("GET /admin/v1/catalog").then((l) => setCatalog(l.data), () => setCatalog([]));
  }, [client]);
  useEffect(() => {
    if (!machine && machines.data?.length) form.set("machine", (machines.data.find((m) => m.state === "online") ?? machines.data[0]!).id);
  }, [machines.data, machine, form]);

  const { models, picked, customShown, modelRef } = modelChosen(catalog, runtime, choice, custom);
  const suggestedId = picked?.model_id ?? modelIdOf(modelRef);
  const replicas = useReplicas(form.values.endpoint ? form.values.modelId.trim() || suggestedId : "", editing?.id);

  // The context asked, for the panel's estimate: a whole number in the relay's range, or none (the machine's
  // default). What is not one is left to the submit, where the relay says what it wants at the field.
  const typedContext = Number(maxContext.trim());
  const contextAsked = SIZED_CONTEXT.includes(runtime) && /^\d+$/.test(maxContext.trim()) && typedContext >= CONTEXT_RANGE.min && typedContext <= CONTEXT_RANGE.max ? typedContext : null;
  const compat = useCompatibility({ machine, runtime, model: modelRef, harness: harness || null, orchestrator: orchestrator || null, endpoint, max_context: contextAsked, residency: runtime === "openai" ? "always" : residency, stack: editing?.id ?? null });

  const machineList = useMemo(() => machines.data ?? [], [machines.data]);
  if (!isAdmin) return <OnlyAdmins orgName={session.org.name} />;
  if (machines.data && machineList.length === 0) return <NoMachineYet />;

  /** The refusal of a field's parameter (or of one of its parts), while the field still holds what was refused. */
  const fieldError = (param: string) => {
    if (!error?.param || !isPartOf(error.param, param)) return null;
    const changed = FIELDS_OF_PARAM[param]?.some((f) => submitted.values?.[f] !== form.values[f]);
    return changed ? null : error.message;
  };
  /** What the compatibility rules refuse of a choice, said at its field as well as in the panel. */
  const refused = (param: Check["param"]) =>
    machine && !compat.pending
      ? compat.result?.checks
          .filter((c) => c.level === "fail" && c.param === param)
          .map((c) => c.message)
          .join(" ") || null
      : null;
  /** Whether saving restarts the runtime of the stack edited (deployed): another runtime, model, model id or context. */
  const restarts =
    editing !== undefined &&
    editing.state === "deployed" &&
    (runtime !== editing.runtime || modelRef !== editing.model_ref || (form.values.modelId.trim() !== "" && form.values.modelId.trim() !== editing.model_id) || maxContext.trim() !== (editing.max_context === null ? "" : String(editing.max_context)));
  const submit = async (e?: Event) => {
    e?.preventDefault();
    if (restarts && !confirmingRestart) return setConfirmingRestart(true);
    setConfirmingRestart(false);
    setSubmitted({ error: null, busy: true, values: form.values });
    try {
      const derived = { modelRef, suggestedId, fromUrl };
      if (editing) {
        const edited = editedBody(form.values, derived, editing, pinnedMachine);
        const saved = await client.call("PATCH /admin/v1/stacks/:id", { params: { id: editing.id }, body: edited });
        notify(saved.changed.length === 0 ? "Nothing changed." : saved.redeployed ? `Changes to ${saved.name} saved: it redeploys on its machine.` : `Changes to ${saved.name} saved.`);
        navigate(`/stacks/${editing.id}`);
        return;
      }
      const stack = await client.call("POST /admin/v1/stacks", { body: { ...stackBody(form.values, derived), org: session.org.id } });
      await client.call("POST /admin/v1/stacks/:id/deploy", { params: { id: stack.id } });
      notify(`${stack.name} created: deploying it.`);
      navigate(`/stacks/${stack.id}`);
    } catch (err) {
      setSubmitted({ error: err as ApiError, busy: false, values: form.values });
      return;
    }
    setSubmitted({ error: null, busy: false, values: null });
  };

  const awaiting = modelRef ? null : "Choose a model: the panel checks it against the machine.";
  // The verdict again above the button it decides (on a phone the panel comes after the form).
  const verdict = verdictOf(machine ? compat.result : null, awaiting);
  const firstFailure = compat.result?.checks.find((c) => c.level === "fail")?.message ?? "";
  const fromUrl = /^https?:\/\//i.test(modelRef);
  return (
    <>
      <ForgeHeader editing={editing} />
      <div class="forge">
        <form class="card forge-form" onSubmit={submit} noValidate>
          {error && !error.param && <Notice tone="error">{error.message}</Notice>}
          <MachineFieldset form={form} fieldError={fieldError} refused={refused} machines={machineList} pinned={pinnedMachine} />
          <RuntimeFieldset form={form} refused={refused} />
          <ModelFieldset form={form} fieldError={fieldError} refused={refused} models={models} customShown={customShown} fromUrl={fromUrl} />
          <LayersFieldset form={form} fieldError={fieldError} refused={refused} />
          <EndpointFieldset form={form} fieldError={fieldError} suggestedId={suggestedId} replicas={replicas} />
          {error?.param && !Object.keys(FIELDS_OF_PARAM).some((f) => isPartOf(error.param!, f)) && <Notice tone="error">{error.message}</Notice>}
          <p class={`verdict-line ${verdict.tone}`} data-testid="forge-verdict" aria-hidden="true">
            {verdict.tone === "fail" ? `✕ ${verdict.verdict} ${firstFailure}` : verdict.verdict}
          </p>
          <FormActions
            editing={editing}
            busy={busy}
            disabled={busy || !machine || !modelRef || compat.result?.ok === false}
            restarts={restarts}
            confirming={confirmingRestart}
            onConfirm={() => void submit()}
            onKeep={() => setConfirmingRestart(false)}
          />
        </form>
        <aside class="forge-side">
          <CompatibilityPanel result={machine ? compat.result : null} pending={compat.pending} awaiting={awaiting} />
        </aside>
      </div>
    </>
  );
}

/** What the Forge says to a member: only admins build stacks. */
function OnlyAdmins({ orgName }: { orgName: string }) {
  return (
    <EmptyState title="Only admins build stacks">
      <p>Ask an admin of {orgName} to build one; you can use every stack from the Stacks page.</p>
    </EmptyState>
  );
}

/** What the Forge says before the organization has a machine. */
function NoMachineYet() {
  return (
    <>
      <PageHeader title="Forge" />
      <EmptyState title="Add a machine first">
        <p>A stack runs on a machine. Add one, and come back.</p>
        <Link href="/machines" class="button primary">
          Go to Machines
        </Link>
      </EmptyState>
    </>
  );
}

/** The Forge's title: building a stack, or editing one (a deployed one redeploys with what its machine builds on). */
function ForgeHeader({ editing }: { editing: Stack | undefined }) {
  return (
    <>
      {editing ? (
        <PageHeader title={`Edit ${editing.name}`} subtitle="Change any layer; the compatibility panel answers as you go." />
      ) : (
        <PageHeader title="Forge" subtitle="Build a stack layer by layer: machine, runtime, model, then the optional layers and the endpoint." />
      )}
      {editing && (editing.state === "deployed" || editing.state === "deploying") && (
        <Notice tone="info">
          This stack is {editing.state}. Its name, endpoint, residency and layers change without a restart; a change to its runtime, model, model id or context restarts its runtime
          (asked before it is saved), and its requests wait for the new one meanwhile. To move it to another machine, undeploy it first.
        </Notice>
      )}
    </>
  );
}

/** The Forge's buttons: create, or save (a save that restarts the runtime asked first), and cancel. */
function FormActions(p: { editing: Stack | undefined; busy: boolean; disabled: boolean; restarts: boolean; confirming: boolean; onConfirm: () => void; onKeep: () => void }) {
  const { editing, busy } = p;
  return (
    <div class="form-actions">
      {p.confirming && editing ? (
        <ConfirmBar
          question={`Save and restart? ${editing.name}'s runtime restarts with these changes: its requests wait for it (the old one serves meanwhile where the machine has room for both).`}
          button="Save and restart"
          busy={busy}
          onConfirm={p.onConfirm}
          onKeep={p.onKeep}
        />
      ) : (
        <button type="submit" class="button primary" disabled={p.disabled}>
          {editing ? (busy ? "Saving…" : p.restarts ? "Save and restart…" : "Save changes") : busy ? "Creating…" : "Create and deploy"}
        </button>
      )}
      {editing && (
        <Link href={`/stacks/${editing.id}`} class="button secondary">
          Cancel
        </Link>
      )}
    </div>
  );
}
