import { useCallback, useState } from "preact/hooks";
import type { ApiError } from "../../api/admin-client.js";
import type { Stack } from "../../api/types.js";
import { useLive } from "../../api/use-live.js";
import { useApp, useIsAdmin } from "../../app-context.js";
import { ConfirmBar } from "../../components/confirm-bar.js";
import { LogTail } from "../../components/log-tail.js";
import { Link } from "../../components/link.js";
import { Loading, NotLoaded, Notice, PageHeader } from "../../components/notice.js";
import { StateBadge, UnverifiedBadge } from "../../components/state-badge.js";
import { CompatibilityPanel } from "../forge/compatibility-panel.js";
import { DeploymentProgress } from "./deployment-progress.js";
import { Playground } from "./playground.js";
import { ReplicasRow } from "./replicas-row.js";
import { Snippets } from "./snippets.js";
import { RecentRequests } from "../requests/recent-requests.js";
import { LiveFigures } from "../overview/live-figures.js";

/** One stack: deploy and undeploy with live progress, how to call it, and a playground. */
export function StackPage({ id }: { id: string }) {
  const { client } = useApp();
  const isAdmin = useIsAdmin();
  const stack = useLive(() => client.call("GET /admin/v1/stacks/:id", { params: { id } }), ["stack"], [id], (e) => e.event === "stack" && e.data.stack_id === id);
  const machineId = stack.data?.machine_id;
  const machineOf = useLive(
    () => (machineId ? client.call("GET /admin/v1/machines/:id", { params: { id: machineId } }) : Promise.resolve(undefined)),
    ["machine"],
    [machineId],
    (e) => e.event === "machine" && e.data.machine_id === machineId,
  );
  const [actionError, setActionError] = useState<string | null>(null);
  const readLog = useCallback((after: number) => client.call("GET /admin/v1/stacks/:id/log", { params: { id }, query: { after } }), [client, id]);

  if (stack.error && !stack.data) return <NotLoaded thing="stack" error={stack.error} back="/stacks" />;
  const s = stack.data;
  if (!s) return <Loading thing="stack" />;
  const machine = machineOf.data?.id === s.machine_id ? machineOf.data : undefined;

  return (
    <>
      <PageHeader
        title={s.name}
        subtitle={
          <>
            <StateBadge state={s.state} /> {s.runtime} on {machine ? <Link href={`/machines/${machine.id}`}>{machine.name}</Link> : s.machine_id}
            {machine && machine.state !== "online" && <StateBadge state={machine.state} label={`machine ${machine.state}`} />}
          </>
        }
      >
        {isAdmin && <StackActions stack={s} reload={stack.reload} onError={setActionError} />}
      </PageHeader>
      {actionError && <Notice tone="error">{actionError}</Notice>}
      {s.state === "failed" && (
        <Notice tone="error">
          <strong>The deploy failed:</strong> {s.state_error ?? "unknown reason"}.{" "}
          {isAdmin && (
            <>
              Retry, or <Link href="/forge">build a stack with another model</Link>.
            </>
          )}
        </Notice>
      )}
      {s.state === "deploying" && machine && machine.state !== "online" && (
        <Notice tone="warn">The machine is {machine.state}: the deploy starts as soon as it connects.</Notice>
      )}
      <RuntimeNotice stack={s} />
      <div class="grid two">
        <LayersCard stack={s} />
        <DeploymentCard stack={s} />
      </div>
      {s.has_endpoint && <Snippets stack={s} />}
      {s.has_endpoint && s.state === "deployed" && <Playground stack={s} />}
      {s.state !== "draft" && <LiveFigures stack={s.id} />}
      <RecentRequests stack={s} onChanged={stack.reload} />
      {isAdmin && s.state !== "draft" && <LogTail key={s.id} title="Runtime log" testId="stack-log" read={readLog} />}
    </>
  );
}

/** What the stack is made of: its model, runtime, layers and context, and whether its machine can run it. */
function LayersCard({ stack: s }: { stack: Stack }) {
  return (
    <section class="card" aria-labelledby="stack-layers">
      <h2 id="stack-layers">Layers</h2>
      <dl class="values">
        <dt>Model id</dt>
        <dd class="mono" data-testid="stack-model-id">
          {s.has_endpoint ? s.model_id : "— (no Endpoint layer: not reachable through the API)"}
        </dd>
        <dt>Model</dt>
        <dd class="mono wrap" data-testid="stack-model">
          {s.model_ref}
          {s.model_unverified && <UnverifiedBadge />}
          {s.model_sha256 && <div class="muted small">sha256 {s.model_sha256} (pinned: the machine refuses any other file)</div>}
        </dd>
        <dt>Runtime</dt>
        <dd>
          {s.runtime}
          {s.runtime_state && (s.state === "deployed" || s.state === "deploying") && ` · ${s.runtime_state}`}
        </dd>
        <dt>Loaded</dt>
        <dd data-testid="stack-residency">
          {s.residency === "always"
            ? "Always, while deployed"
            : s.idle_unload_s > 0
              ? `On demand: by its first request, unloaded after ${s.idle_unload_s.toLocaleString("en-US")} s idle or when the machine needs the memory`
              : "On demand: by its first request, unloaded only when the machine needs the memory"}
        </dd>
        {s.has_endpoint && s.replicas.length > 0 && <ReplicasRow stack={s} />}
        <dt>Harness</dt>
        <dd data-testid="stack-harness">
          {s.harness ?? "none"}
          {s.harness_options?.prompt !== undefined && <div class="muted small wrap">“{String(s.harness_options.prompt)}”</div>}
          {s.harness_options?.parallel_tool_calls !== undefined && <div class="muted small">{s.harness_options.parallel_tool_calls ? "several calls in one answer" : "one call per answer"}</div>}
        </dd>
        <dt>Orchestrator</dt>
        <dd data-testid="stack-orchestrator">
          {s.orchestrator ?? "none"}
          {s.orchestrator && Object.keys(s.orchestrator_options ?? {}).length > 0 && (
            <div class="muted small">
              {Object.entries(s.orchestrator_options)
                .map(([k, v]) => `${k.replace(/_/g, " ")} ${String(v)}`)
                .join(" · ")}
            </div>
          )}
        </dd>
        <dt>Context</dt>
        <dd data-testid="stack-context">
          {s.context_size ? `${s.context_size.toLocaleString("en-US")} tokens per request` : s.residency === "on_demand" && s.state === "deployed" ? "known once its model has loaded after this deploy" : "known once deployed"}
          {s.max_context !== null && s.context_size !== s.max_context && (
            <span class="muted"> ({s.max_context.toLocaleString("en-US")} asked{s.context_size && s.context_size < s.max_context ? ": the model was trained for less" : ""})</span>
          )}
        </dd>
      </dl>
      <CompatibilityPanel result={s.compatibility} />
    </section>
  );
}

/** The stack's latest deployment, step by step, or what a deploy will do. */
function DeploymentCard({ stack: s }: { stack: Stack }) {
  const { deployment } = s;
  return (
    <section class="card" aria-labelledby="stack-deploy">
      <h2 id="stack-deploy">Deployment</h2>
      {s.state === "draft" && deployment ? (
        <p class="muted" data-testid="undeployed">
          Undeployed: nothing of it runs on the machine now. Deploy installs the runtime, pulls the model and configures the endpoint again.
        </p>
      ) : deployment ? (
        <>
          <DeploymentProgress deployment={deployment} />
          {deployment.error && !deployment.steps.some((step) => step.error) && <p class="field-error">{deployment.error}</p>}
        </>
      ) : (
        <p class="muted">Not deployed yet. Deploy installs the runtime, pulls the model and configures the endpoint on the machine.</p>
      )}
    </section>
  );
}

/** What the stack's runtime is doing now, in what it means for its requests; nothing while it simply serves. */
function RuntimeNotice({ stack: s }: { stack: Stack }) {
  if (s.state === "deploying" && s.deployed_at !== null) {
    return <Notice tone="info">Being deployed again: requests for {s.model_id} wait for its new runtime (where the machine has room for both, the old one serves until then).</Notice>;
  }
  if (s.state !== "deployed" || !s.runtime_state || s.runtime_state === "ready") return null;
  if (s.residency === "on_demand" && (s.runtime_state === "unloaded" || s.runtime_state === "unloading")) {
    return (
      <Notice tone="info">
        Its model is {s.runtime_state === "unloaded" ? "unloaded" : "unloading"}: the next request loads it, and waits for the load{s.runtime_error ? ` (the last load failed: ${s.runtime_error})` : ""}.
      </Notice>
    );
  }
  if (s.residency === "on_demand" && s.runtime_state === "loading") return <Notice tone="info">Its model is loading: requests wait for it.</Notice>;
  return (
    <Notice tone="warn">
      The runtime is {s.runtime_state}
      {s.runtime_error ? `: ${s.runtime_error}` : ""}. Requests get 503 until it is ready again.
    </Notice>
  );
}

/** An admin's actions on a stack: deploy, load and unload its model, edit, undeploy and delete (the breaking ones asked first). */
function StackActions({ stack: s, reload, onError }: { stack: Stack; reload: () => void; onError: (message: string | null) => void }) {
  const { client, navigate, notify } = useApp();
  const [busy, setBusy] = useState(false);
  /** The breaking action waiting for its confirmation, if any. */
  const [confirming, setConfirming] = useState<"undeploy" | "delete" | null>(null);
  const act = async (action: "deploy" | "undeploy" | "delete" | "load" | "unload") => {
    setBusy(true);
    onError(null);
    try {
      if (action === "delete") {
        await client.call("DELETE /admin/v1/stacks/:id", { params: { id: s.id } });
        notify(`${s.name} is deleted.`);
        navigate("/stacks");
        return;
      }
      if (action === "load" || action === "unload") {
        await client.call(action === "load" ? "POST /admin/v1/stacks/:id/load" : "POST /admin/v1/stacks/:id/unload", { params: { id: s.id } });
        notify(action === "load" ? `${s.name}'s model is loaded.` : `${s.name}'s model is unloaded: its next request loads it again.`);
        reload();
        return;
      }
      await client.call(action === "deploy" ? "POST /admin/v1/stacks/:id/deploy" : "POST /admin/v1/stacks/:id/undeploy", { params: { id: s.id } });
      notify(action === "deploy" ? `Deploying ${s.name}: the steps follow below.` : `${s.name} is undeploying: ${afterUndeploy}`);
      setConfirming(null);
      reload();
    } catch (err) {
      onError((err as ApiError).message);
    } finally {
      setBusy(false);
    }
  };
  /** The replicas that go on serving the model id once this stack is undeployed. */
  const servingReplicas = s.replicas.filter((r) => r.state === "deployed" || r.state === "deploying");
  const afterUndeploy = servingReplicas.length
    ? `${servingReplicas.map((r) => r.name).join(", ")} go${servingReplicas.length === 1 ? "es" : ""} on serving ${s.model_id}.`
    : `${s.model_id} gets 404 from now on.`;
  const onDemand = s.residency === "on_demand" && s.state === "deployed";
  const canLoad = onDemand && (s.runtime_state === "unloaded" || s.runtime_state === null);
  const canUnload = onDemand && s.runtime_state === "ready";
  const canDeploy = s.state === "draft" || s.state === "failed";
  const canUndeploy = s.state === "deployed" || s.state === "deploying" || s.state === "failed";
  const canDelete = s.state === "draft" || s.state === "failed";
  /** What each breaking action says before it is done, and the button that does it. */
  const CONFIRM = {
    undeploy: {
      question:
        s.state === "failed"
          ? "Undeploy? The machine drops what the failed deploy left."
          : servingReplicas.length
            ? `Undeploy? ${afterUndeploy}`
            : `Undeploy? Requests for ${s.model_id} get 404 from now on, until it is deployed again.`,
      button: "Undeploy",
    },
    delete: { question: "Delete this stack for good? Its deployments go with it; keys restricted to it reach nothing through it.", button: "Delete stack" },
  } as const;
  return confirming ? (
      <ConfirmBar {...CONFIRM[confirming]} busy={busy} onConfirm={() => act(confirming)} onKeep={() => setConfirming(null)} />
    ) : (
      <>
        {canDeploy && (
          <button type="button" class="button primary" disabled={busy} onClick={() => act("deploy")}>
            {s.state === "failed" ? "Retry deploy" : "Deploy"}
          </button>
        )}
        {canLoad && (
          <button type="button" class="button secondary" disabled={busy} onClick={() => act("load")}>
            {busy ? "Loading…" : "Load now"}
          </button>
        )}
        {canUnload && (
          <button type="button" class="button secondary" disabled={busy} onClick={() => act("unload")}>
            Unload now
          </button>
        )}
        <Link href={`/stacks/${s.id}/edit`} class="button secondary">
          Edit
        </Link>
        {canUndeploy && (
          <button type="button" class="button secondary" disabled={busy} onClick={() => setConfirming("undeploy")}>
            Undeploy…
          </button>
        )}
        {canDelete && (
          <button type="button" class="button secondary danger-text" disabled={busy} onClick={() => setConfirming("delete")}>
            Delete…
          </button>
        )}
      </>
    );
}
