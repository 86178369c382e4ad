import type { RequestHandler } from "express";
import type { ApiKeyRecord } from "../../keys/index.js";
import { keyAllowsStack, type GatewayDirectory } from "../../routing/index.js";

/** `GET /v1/models`: every model id the key may call, once each, from the directory chat routes by. */
export function listModels(directory: GatewayDirectory): RequestHandler {
  return (_req, res) => {
    const key = res.locals.apiKey as ApiKeyRecord;
    const { orgSlug, stacks } = directory.catalog(key.orgId);
    const seen = new Map<string, { id: string; object: "model"; created: number; owned_by: string }>();
    for (const stack of stacks) {
      if (!keyAllowsStack(key, stack) || seen.has(stack.modelId)) continue;
      seen.set(stack.modelId, { id: stack.modelId, object: "model", created: Math.floor((stack.deployedAt ?? stack.createdAt) / 1000), owned_by: orgSlug });
    }
    res.json({ object: "list", data: [...seen.values()] });
  };
}
