import type { ApiKeyRecord } from "../keys/index.js";
import type { ModelCatalog } from "./gateway-directory.js";
import { keyAllowsStack } from "./route-request.js";

/** A model a key may call, as `/v1/models` lists it. */
export interface ListedModel {
  id: string;
  /** Unix seconds: when its first serving stack was deployed. */
  created: number;
  /** The organization's slug. */
  ownedBy: string;
}

/** Every model id the key may call (a deployed stack with an endpoint it may reach serves it), once each, oldest first. */
export function modelsForKey(directory: { catalog(orgId: string): ModelCatalog }, key: ApiKeyRecord): ListedModel[] {
  const { orgSlug, stacks } = directory.catalog(key.orgId);
  const seen = new Map<string, ListedModel>();
  for (const stack of stacks) {
    if (seen.has(stack.modelId) || !keyAllowsStack(key, stack)) continue;
    seen.set(stack.modelId, { id: stack.modelId, created: Math.floor((stack.deployedAt ?? stack.createdAt) / 1000), ownedBy: orgSlug });
  }
  return [...seen.values()];
}
