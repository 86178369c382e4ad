import type { Stack } from "../../api/types.js";
import { SIZED_CONTEXT } from "./context-bounds.js";
import type { ForgeFields } from "./forge-fields.js";

/** What the Forge derived from its fields: the model named, the id the relay would give it, whether it is a download. */
export interface Derived {
  modelRef: string;
  suggestedId: string;
  fromUrl: boolean;
}

/** A new stack as the admin API takes it, from the Forge's fields (its organization added by the caller). */
export function stackBody(v: ForgeFields, d: Derived, editing?: Stack) {
  return {
    name: (v.name.trim() || (editing ? editing.name : v.modelId.trim() || d.suggestedId || "stack")).slice(0, 100),
    machine: v.machine,
    runtime: v.runtime,
    model: d.modelRef,
    model_sha256: d.fromUrl && v.sha256.trim() ? v.sha256.trim() : null,
    model_id: v.modelId.trim() || (editing ? null : d.suggestedId || null),
    harness: v.harness || null,
    harness_options:
      v.harness === "system-prompt"
        ? { prompt: v.systemPrompt }
        : v.harness === "router"
          ? { routes: v.routes, ...(v.routeDefault.trim() ? { default: v.routeDefault.trim() } : {}) }
          : v.harness === "tools" && !v.parallelCalls
            ? { parallel_tool_calls: false }
            : undefined,
    orchestrator: v.orchestrator || null,
    orchestrator_options:
      v.orchestrator === "refine" ? { rounds: v.rounds } : v.orchestrator === "vote" ? { samples: v.samples, ...(v.sampleTemperature.trim() ? { temperature: v.sampleTemperature.trim() } : {}) } : undefined,
    endpoint: v.endpoint,
    // An existing server is always on: Makina does not start or stop it.
    residency: v.runtime === "openai" ? "always" : v.residency,
    idle_unload_s: /^\d+$/.test(v.idleUnload.trim()) ? Number(v.idleUnload.trim()) : (v.idleUnload.trim() as unknown as number),
    max_context: !SIZED_CONTEXT.includes(v.runtime) || v.maxContext.trim() === "" ? null : /^\d+$/.test(v.maxContext.trim()) ? Number(v.maxContext.trim()) : (v.maxContext.trim() as unknown as number),
  };
}

/**
 * The changes to `editing` as the admin API takes them. Every field is sent; the relay changes (and records) only
 * what differs. A layer of the same kind keeps the options this form has no field for (a system prompt's
 * temperature, a refine's prompts); a deployed stack stays on its machine (`pinnedMachine`).
 */
export function editedBody(v: ForgeFields, d: Derived, editing: Stack, pinnedMachine: boolean) {
  const body = stackBody(v, d, editing);
  const kept = (kind: string, was: string | null, stored: Record<string, unknown>, given: Record<string, unknown> | undefined) => (kind && kind === was ? { ...stored, ...given } : given);
  const storedParallel = editing.harness_options?.parallel_tool_calls;
  return {
    ...body,
    machine: pinnedMachine ? undefined : v.machine,
    // A pin the form does not show (the model is not a URL) stays, unless the model changed.
    model_sha256: d.fromUrl ? body.model_sha256 : d.modelRef === editing.model_ref ? undefined : null,
    // Untouched, the id is left to the relay: it follows the model file's name when it did.
    model_id: v.modelId.trim() === editing.model_id ? undefined : v.modelId.trim() || null,
    harness_options: kept(
      v.harness,
      editing.harness,
      editing.harness_options ?? {},
      v.harness === "router"
        ? { routes: v.routes, default: v.routeDefault.trim() || undefined }
        : v.harness === "tools"
          ? { parallel_tool_calls: v.parallelCalls === (storedParallel !== false) ? storedParallel : v.parallelCalls }
          : body.harness_options,
    ),
    orchestrator_options: kept(
      v.orchestrator,
      editing.orchestrator,
      editing.orchestrator_options ?? {},
      v.orchestrator === "vote" ? { samples: v.samples, temperature: v.sampleTemperature.trim() || undefined } : body.orchestrator_options,
    ),
  };
}
