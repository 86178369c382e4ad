import type { StackRoute } from "../../admin-contract/index.js";
import type { Access } from "../../auth/index.js";
import { MODEL_CATALOG } from "../../compatibility/index.js";
import type { ControlPlane } from "../../control/index.js";
import type { RouteHandlers } from "./mount-routes.js";
import { toWire } from "./to-wire.js";
import { pageOf, wholePage } from "./page-of.js";
import type { AuditRecorder } from "./audit-trail.js";

/** Stacks: built, checked, deployed and undeployed by the organization's admins; seen by all of it. */
export function stackRoutes(control: ControlPlane, record: AuditRecorder): RouteHandlers<StackRoute, Access> {
  const target = (s: { id: string; name: string }) => ({ kind: "stack", id: s.id, name: s.name });
  return {
    "GET /admin/v1/stacks": async (input, access) => {
      const { org, machine, ...ask } = input.query();
      // Searched, filtered and sorted as light rows; only the page's stacks get their compatibility and deployment.
      const rows = (await control.stackRecords(access.org(org).id))
        .filter((s) => machine === undefined || s.machineId === machine)
        .map((s) => ({ stack: s, name: s.name, state: s.state, model_id: s.modelId, runtime: s.runtime, created_at: s.createdAt, deployed_at: s.deployedAt }));
      const page = pageOf(rows, ask, { searched: (r) => [r.name, r.model_id, r.stack.modelRef, r.stack.id], state: (r) => r.state });
      return wholePage(page, async (found) => toWire(await control.viewsOf(found.map((r) => r.stack))));
    },
    "GET /admin/v1/stacks/:id": async ({ params }, access) => toWire(await control.stack(params.id, access.orgScope)),
    "POST /admin/v1/stacks": async (input, access) => {
      access.requireAdmin("create stacks");
      const b = input.body();
      const stack = await control.createStack({ ...stackFields(b), org: access.org(b.org).id, name: b.name, machine: b.machine, runtime: b.runtime, model: b.model });
      await record(access, { orgId: stack.orgId, action: "stack.created", target: target(stack), detail: { machine: stack.machineId, runtime: stack.runtime, model: stack.modelRef, ...(stack.captureHours !== null && { capture_hours: stack.captureHours }) } });
      return toWire(stack);
    },
    "POST /admin/v1/compatibility": async (input, access) => {
      const b = input.body();
      return toWire(await control.checkPlan({ org: access.org(b.org).id, machine: b.machine, runtime: b.runtime, model: b.model, harness: b.harness, orchestrator: b.orchestrator, endpoint: b.endpoint, maxContext: b.max_context, askMachine: access.isAdmin }));
    },
    "GET /admin/v1/catalog": () => toWire({ object: "list", data: MODEL_CATALOG.map(({ facts, ...m }) => ({ ...m, sizeBytes: facts.weightsBytes })) }),
    "PATCH /admin/v1/stacks/:id": async (input, access) => {
      access.requireAdmin("change stacks");
      const b = input.body();
      const { before, stack, changed, redeployed } = await control.updateStack(input.params.id, access.orgScope, { ...stackFields(b), name: b.name, machine: b.machine, runtime: b.runtime, model: b.model });
      if (changed.length > 0) {
        // What each field was and is, in the API's words (options as the names of those set, never their texts).
        const wire = (v: Record<string, unknown>) => toWire(v) as Record<string, unknown>;
        const was = wire({ ...before, machine: before.machineId, model: before.modelRef, endpoint: before.hasEndpoint });
        const now = wire({ ...stack, machine: stack.machineId, model: stack.modelRef, endpoint: stack.hasEndpoint });
        const shown = (v: unknown) => (v !== null && typeof v === "object" && !Array.isArray(v) ? Object.keys(v).join(", ") || null : v);
        const detail = Object.fromEntries(changed.flatMap((f) => [[`${f}_was`, shown(was[f])], [f, shown(now[f])]]));
        await record(access, { orgId: stack.orgId, action: "stack.changed", target: target(stack), detail: { ...detail, ...(redeployed && { redeployed: true }) } });
      }
      return toWire({ ...stack, changed, redeployed });
    },
    "DELETE /admin/v1/stacks/:id": async ({ params }, access) => {
      access.requireAdmin("delete stacks");
      const stack = await control.deleteStack(params.id, access.orgScope);
      await record(access, { orgId: stack.orgId, action: "stack.deleted", target: target(stack), detail: { model: stack.modelId } });
      return { id: stack.id, deleted: true as const };
    },
    "POST /admin/v1/stacks/:id/deploy": async ({ params }, access) => {
      access.requireAdmin("deploy stacks");
      const stack = await control.deploy(params.id, access.orgScope);
      await record(access, { orgId: stack.orgId, action: "stack.deployed", target: target(stack) });
      return toWire(stack);
    },
    "POST /admin/v1/stacks/:id/undeploy": async ({ params }, access) => {
      access.requireAdmin("undeploy stacks");
      const stack = await control.undeploy(params.id, access.orgScope);
      await record(access, { orgId: stack.orgId, action: "stack.undeployed", target: target(stack) });
      return toWire(stack);
    },
  };
}

/** A stack's fields as create and edit both take them, from the admin API's names to the control plane's. */
function stackFields<B extends { model_sha256?: string | null; model_id?: string | null; harness?: string | null; harness_options?: Record<string, unknown> | null; orchestrator?: string | null; orchestrator_options?: Record<string, unknown> | null; endpoint?: boolean; capture_hours?: number | null; max_context?: number | null }>(b: B) {
  return {
    modelSha256: b.model_sha256,
    modelId: b.model_id,
    harness: b.harness,
    harnessOptions: b.harness_options,
    orchestrator: b.orchestrator,
    orchestratorOptions: b.orchestrator_options,
    endpoint: b.endpoint,
    captureHours: b.capture_hours,
    maxContext: b.max_context,
  };
}
