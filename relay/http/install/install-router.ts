import { Router } from "express";
import { MakinaError } from "../../../proto/index.js";
import type { InstallFiles } from "./install-files.js";

/**
 * What a bare machine fetches to join this relay: `GET /install.sh`, the script the install command pipes
 * into `sh`, and `GET /install/makina-agent-<version>.tgz`, the agent package of this relay's version. Both
 * are public (a machine has no credentials yet); the script checks the machine's token with the relay
 * before it installs anything.
 */
export function installRouter(files: InstallFiles): Router {
  const r = Router();
  const notBuilt = () => new MakinaError("not_found", "This relay has no install files: they are made by `npm run build` (dist/install).");
  r.get("/install.sh", (_req, res, next) => {
    if (!files.script) return next(notBuilt());
    res.set({ "content-type": "text/x-shellscript; charset=utf-8", "cache-control": "no-cache", "x-content-type-options": "nosniff" }).send(files.script);
  });
  r.get("/install/:file", (req, res, next) => {
    const pkg = files.agentPackage;
    if (!pkg) return next(notBuilt());
    if (req.params.file !== pkg.file) return next(new MakinaError("not_found", `This relay serves ${pkg.file}, not '${req.params.file}'.`));
    // The file name carries the version: a given URL never changes content.
    res.set({ "content-type": "application/gzip", "cache-control": "public, max-age=31536000, immutable", "x-checksum-sha256": pkg.sha256 }).send(pkg.bytes);
  });
  return r;
}
