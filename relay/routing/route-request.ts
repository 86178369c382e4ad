import { MakinaError } from "../../proto/index.js";
import type { ApiKeyRecord, Stack } from "../store/index.js";
import type { AgentRegistry, AgentSession } from "../link/index.js";

/** Stacks of the key's organization that serve `modelId` and that the key may use. */
export function stacksForKey(directory: { servingModel(orgId: string, modelId: string): Stack[] }, key: ApiKeyRecord, modelId: string): Stack[] {
  const serving = directory.servingModel(key.orgId, modelId);
  if (serving.length === 0) {
    throw new MakinaError("model_not_found", `The model \`${modelId}\` does not exist or is not deployed.`, { param: "model" });
  }
  const allowed = serving.filter((s) => keyAllowsStack(key, s));
  if (allowed.length === 0) {
    throw new MakinaError("model_access_denied", `This API key does not have access to the model \`${modelId}\`.`, { param: "model" });
  }
  return allowed;
}

/** Whether a key's stack and machine restrictions let it reach a stack. */
export function keyAllowsStack(key: ApiKeyRecord, stack: Stack): boolean {
  if (key.stackIds && !key.stackIds.includes(stack.id)) return false;
  if (key.machineIds && !key.machineIds.includes(stack.machineId)) return false;
  return true;
}

/**
 * Picks where a request runs: among the allowed stacks, those whose machine is
 * online and whose runtime is ready, the one with the fewest requests in flight.
 */
export function pickTarget(registry: AgentRegistry, stacks: Stack[]): { stack: Stack; session: AgentSession } {
  let best: { stack: Stack; session: AgentSession } | undefined;
  let anyOnline = false;
  for (const stack of stacks) {
    const session = registry.get(stack.machineId);
    if (!session || session.state !== "open") continue;
    anyOnline = true;
    if (!session.readyStacks.has(stack.id)) continue;
    if (!best || session.inFlight < best.session.inFlight) best = { stack, session };
  }
  if (best) return best;
  if (anyOnline) {
    throw new MakinaError("runtime_unavailable", "The runtime serving this model is not ready yet. Retry shortly.", { retryAfterMs: 5000 });
  }
  throw new MakinaError("machine_offline", "Every machine serving this model is offline.", { retryAfterMs: 5000 });
}
