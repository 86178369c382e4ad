import type { RequestHandler } from "express";
import { MakinaError } from "../../../proto/index.js";
import { hashSecret, hashesEqual } from "../../keys/index.js";

/** Checks the admin bearer token against its stored hash. */
export function adminAuth(adminTokenHash: () => string | undefined): RequestHandler {
  return (req, _res, next) => {
    const token = /^Bearer\s+(\S+)\s*$/i.exec(req.get("authorization") ?? "")?.[1];
    const stored = adminTokenHash();
    if (!token || !stored || !hashesEqual(stored, hashSecret(token))) {
      next(new MakinaError("invalid_admin_token", "Missing or invalid admin token. Pass it as `Authorization: Bearer <admin token>`."));
      return;
    }
    next();
  };
}
