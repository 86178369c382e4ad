import type { RequestHandler } from "express";
import type { ApiKeyRecord } from "../../keys/index.js";
import { modelsForKey, type GatewayDirectory } from "../../routing/index.js";

/** `GET /v1/models`: every model id the key may call, from the directory chat routes by. */
export function listModels(directory: GatewayDirectory): RequestHandler {
  return (_req, res) => {
    const models = modelsForKey(directory, res.locals.apiKey as ApiKeyRecord);
    res.json({ object: "list", data: models.map((m) => ({ id: m.id, object: "model", created: m.created, owned_by: m.ownedBy })) });
  };
}
