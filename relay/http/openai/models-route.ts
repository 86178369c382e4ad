import type { RequestHandler } from "express";
import type { ApiKeyRecord, Store } from "../../store/index.js";
import { keyAllowsStack } from "../../routing/index.js";

/** `GET /v1/models`: every model id the key may call, once each. */
export function listModels(store: Store): RequestHandler {
  return (_req, res) => {
    const key = res.locals.apiKey as ApiKeyRecord;
    const org = store.orgs.find(key.orgId);
    const seen = new Map<string, { id: string; object: "model"; created: number; owned_by: string }>();
    for (const stack of store.stacks.servingInOrg(key.orgId)) {
      if (!keyAllowsStack(key, stack) || seen.has(stack.modelId)) continue;
      seen.set(stack.modelId, { id: stack.modelId, object: "model", created: Math.floor((stack.deployedAt ?? stack.createdAt) / 1000), owned_by: org?.slug ?? "" });
    }
    res.json({ object: "list", data: [...seen.values()] });
  };
}
