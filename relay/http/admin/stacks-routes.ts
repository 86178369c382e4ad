import type { StackResidency, StackRoute } from "../../admin-contract/index.js";
import type { Actor } from "../../auth/index.js";
import { MODEL_CATALOG } from "../../compatibility/index.js";
import { redactText } from "../../../proto/index.js";
import type { ControlPlane, StackView } from "../../control/index.js";
import type { RouteHandlers } from "./mount-routes.js";
import { toWire } from "./to-wire.js";
import { logPage, pageOf, wholePage } from "./page-of.js";

/** Stacks (the control plane's `stacks`): a page of them, one, create, check a plan, change, delete, deploy, undeploy; and the model catalog. */
export function stackRoutes(control: ControlPlane): RouteHandlers<StackRoute, Actor> {
  return {
    "GET /admin/v1/stacks": async (input, actor) => {
      const { org, machine, ...ask } = input.query();
      // Searched, filtered and sorted as light rows; only the page's stacks get their compatibility and deployment.
      const rows = (await control.stacks.records(actor, org, machine)).map((s) => ({ stack: s, name: s.name, state: s.state, model_id: s.modelId, runtime: s.runtime, created_at: s.createdAt, deployed_at: s.deployedAt }));
      // Searched by the model reference as shown: a search cannot spell out a credential the page hides.
      const page = pageOf(rows, ask, { searched: (r) => [r.name, r.model_id, redactText(r.stack.modelRef), r.stack.id], state: (r) => r.state });
      return wholePage(page, async (found) => (await control.stacks.viewsOf(found.map((r) => r.stack))).map(shown));
    },
    "GET /admin/v1/stacks/:id/log": async (input, actor) => {
      const { after, limit } = input.query();
      return logPage(await control.stacks.log(actor, input.params.id, after, limit), after);
    },
    "GET /admin/v1/stacks/:id": async ({ params }, actor) => shown(await control.stacks.get(actor, params.id)),
    "POST /admin/v1/stacks": async (input, actor) => {
      const stack = () => {
        const b = input.body();
        return { ...stackFields(b), org: b.org, name: b.name, machine: b.machine, runtime: b.runtime, model: b.model };
      };
      return shown(await control.stacks.create(actor, stack));
    },
    "POST /admin/v1/compatibility": async (input, actor) => {
      const b = input.body();
      return toWire(await control.stacks.check(actor, b.org, { machine: b.machine, runtime: b.runtime, model: b.model, harness: b.harness, orchestrator: b.orchestrator, endpoint: b.endpoint, maxContext: b.max_context, residency: b.residency, stackId: b.stack ?? undefined }));
    },
    "GET /admin/v1/catalog": () => toWire({ object: "list", data: MODEL_CATALOG.map(({ facts, ...m }) => ({ ...m, sizeBytes: facts.weightsBytes })) }),
    "PATCH /admin/v1/stacks/:id": async (input, actor) => {
      const edit = () => {
        const b = input.body();
        return { ...stackFields(b), name: b.name, machine: b.machine, runtime: b.runtime, model: b.model };
      };
      const { stack, changed, redeployed } = await control.stacks.update(actor, input.params.id, edit);
      return { ...shown(stack), changed, redeployed };
    },
    "DELETE /admin/v1/stacks/:id": async ({ params }, actor) => {
      const stack = await control.stacks.delete(actor, params.id);
      return { id: stack.id, deleted: true as const };
    },
    "POST /admin/v1/stacks/:id/deploy": async ({ params }, actor) => shown(await control.stacks.deploy(actor, params.id)),
    "POST /admin/v1/stacks/:id/undeploy": async ({ params }, actor) => shown(await control.stacks.undeploy(actor, params.id)),
    "POST /admin/v1/stacks/:id/load": async ({ params }, actor) => shown(await control.stacks.setLoaded(actor, params.id, true)),
    "POST /admin/v1/stacks/:id/unload": async ({ params }, actor) => shown(await control.stacks.setLoaded(actor, params.id, false)),
  };
}

/**
 * A stack as the admin API shows it: its model reference with any credential in it redacted (a URL's password
 * or token, a signed link's query), as are its deployment's step errors; the relay keeps the whole reference,
 * and an edit that gives it back as shown leaves it as it is.
 */
function shown(stack: StackView) {
  const wire = toWire(stack);
  return {
    ...wire,
    model_ref: redactText(wire.model_ref),
    deployment: wire.deployment && { ...wire.deployment, steps: wire.deployment.steps.map((step) => ({ ...step, error: step.error === null ? null : redactText(step.error) })) },
  };
}

/** A stack's fields as create and edit both take them, from the admin API's names to the control plane's. */
function stackFields<B extends { model_sha256?: string | null; model_id?: string | null; harness?: string | null; harness_options?: Record<string, unknown> | null; orchestrator?: string | null; orchestrator_options?: Record<string, unknown> | null; endpoint?: boolean; capture_hours?: number | null; max_context?: number | null; residency?: StackResidency; idle_unload_s?: number }>(b: B) {
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
    residency: b.residency,
    idleUnloadS: b.idle_unload_s,
  };
}
