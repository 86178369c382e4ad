import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import express, { Router } from "express";

/** Paths the web application never answers: the gateway, the APIs and health keep their own 404s. */
const NOT_WEB = /^\/(v1|admin|auth|health|assets)(\/|$)/;

/** The built web application (`dist/web`, made by `npm run build`), or null when it is not built. */
export function findWebDir(): string | null {
  for (let dir = dirname(fileURLToPath(import.meta.url)); dir !== dirname(dir); dir = dirname(dir)) {
    for (const candidate of [join(dir, "web"), join(dir, "dist", "web")]) {
      if (existsSync(join(candidate, "index.html")) && existsSync(join(candidate, "assets"))) return candidate;
    }
  }
  return null;
}

const SECURITY_HEADERS = {
  "content-security-policy": "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "same-origin",
  "x-frame-options": "DENY",
};

/**
 * Serves the web application: hashed assets under `/assets` cached for a year,
 * and `index.html` (never cached) for every other GET that is not the gateway,
 * an API or health, so the app's own routes (`/machines`, `/stacks/…`) load.
 */
export function webApp(dir: string | null): Router {
  const r = Router();
  if (!dir) {
    r.get("/", (_req, res) => {
      res.status(503).type("text/plain").send("The web application is not built: run `npm run build`.\n");
    });
    return r;
  }
  const index = readFileSync(join(dir, "index.html"));
  r.use("/assets", express.static(join(dir, "assets"), { immutable: true, maxAge: "365d", index: false }));
  r.get(/.*/, (req, res, next) => {
    if (NOT_WEB.test(req.path)) return next();
    res.set({ ...SECURITY_HEADERS, "cache-control": "no-cache", "content-type": "text/html; charset=utf-8" }).send(index);
  });
  return r;
}
