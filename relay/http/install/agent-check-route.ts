import { Router } from "express";
import { MakinaError } from "../../../proto/index.js";
import type { ControlPlane } from "../../control/index.js";
import { jsonBody } from "../json-body.js";
import type { AgentPackage } from "./install-files.js";

/**
 * `POST /agent/v1/check` `{machine_id, token}`: whether the link would accept these credentials, so the
 * install script can stop before installing anything, with the relay's own words. 200 `{machine_id, name,
 * agent_package}` (where to download the agent package of this relay's version, and its SHA-256; null when
 * it was not built), or 401 `invalid_machine_token`.
 */
export function agentCheckRouter(control: ControlPlane, agentPackage: AgentPackage | null): Router {
  const pkg = agentPackage && { url: `/install/${agentPackage.file}`, file: agentPackage.file, version: agentPackage.version, sha256: agentPackage.sha256 };
  const r = Router();
  r.post("/agent/v1/check", ...jsonBody(4096), (req, res, next) => {
    const b = (req.body ?? {}) as Record<string, unknown>;
    control.machines.checkToken(typeof b.machine_id === "string" ? b.machine_id : "", typeof b.token === "string" ? b.token : "").then((checked) => {
      if ("refusal" in checked) return next(new MakinaError("invalid_machine_token", checked.refusal));
      res.json({ machine_id: checked.machine.id, name: checked.machine.name, agent_package: pkg });
    }, next);
  });
  return r;
}
