import type { Stack } from "../../api/types.js";
import { useLive } from "../../api/use-live.js";
import { useApp } from "../../app-context.js";

/**
 * The organization's other stacks with an endpoint for `modelId` (replicas of the stack being built or edited,
 * `editingId`): they share its requests, so the Forge says so at the model id. Kept current by the stack events.
 */
export function useReplicas(modelId: string, editingId: string | undefined): Stack[] {
  const { client } = useApp();
  const found = useLive(
    () => (modelId ? client.call("GET /admin/v1/stacks", { query: { q: modelId, per_page: 50 } }).then((l) => l.data.filter((st) => st.model_id === modelId && st.has_endpoint && st.id !== editingId)) : Promise.resolve([])),
    ["stack"],
    [modelId],
  );
  return found.data ?? [];
}
