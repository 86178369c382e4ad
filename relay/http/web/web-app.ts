import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, extname, join } from "node:path";
import { fileURLToPath } from "node:url";
import express, { Router } from "express";

/**
 * The web application's own pages (relay/web/src/router.ts): only these load the app, so every other
 * path (the gateway's, the APIs', a typo) keeps its JSON 404 in the documented envelope.
 */
const APP_PAGES = /^\/(?:machines(?:\/[\w-]+)?|stacks(?:\/[\w-]+(?:\/edit)?)?|requests(?:\/[\w-]+)?|forge|keys|usage|users|audit|alerts|account)?\/?$/;
/** Paths of the relay's APIs and files: a miss there is always the JSON 404, whoever asks. */
const API_PATHS = /^\/(?:v1|admin|auth|assets|metrics|health|install|agent)(?:[/.]|$)/i;

/** The built web application (`dist/web`, made by `npm run build`), or null when it is not built. */
export function findWebDir(): string | null {
  // This file is relay/http/web/ of the sources or of dist/: three levels up is the repository or dist/, and the
  // build puts the application in dist/web. Only there: nothing planted in a directory above is ever served.
  const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..");
  for (const candidate of [join(root, "web"), join(root, "dist", "web")]) {
    if (existsSync(join(candidate, "index.html")) && existsSync(join(candidate, "assets"))) return candidate;
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
 * and `index.html` (never cached) for the app's own pages (`/`, `/machines`,
 * `/stacks/…`), so a page can be reloaded or opened from a link.
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
  const compressed = compressedAssets(join(dir, "assets"));
  r.get("/assets/:file", (req, res, next) => {
    const asset = compressed.get(req.params.file);
    if (!asset) return next();
    // The smallest the browser takes: brotli, else gzip, else the file as built.
    const [body, coding] = req.acceptsEncodings("br") ? [asset.br, "br"] : req.acceptsEncodings("gzip") ? [asset.gzip, "gzip"] : [asset.raw, undefined];
    res.set({ "content-type": asset.type, "cache-control": "public, max-age=31536000, immutable", vary: "Accept-Encoding", ...(coding && { "content-encoding": coding }) });
    res.send(body);
  });
  r.use("/assets", express.static(join(dir, "assets"), { immutable: true, maxAge: "365d", index: false }));
  const page = (res: express.Response) => res.set({ ...SECURITY_HEADERS, "cache-control": "no-cache", "content-type": "text/html; charset=utf-8" });
  r.get(APP_PAGES, (_req, res) => {
    page(res).send(index);
  });
  // A link to a page that does not exist, opened in a browser, gets the app's own "no such page" (with a 404):
  // never a JSON body on screen. Everyone else (API clients, curl) keeps the JSON 404 of the error envelope.
  r.get(/.*/, (req, res, next) => {
    if (API_PATHS.test(req.path) || req.accepts(["json", "html"]) !== "html") return next();
    page(res).status(404).send(index);
  });
  return r;
}

/** A built asset as the relay serves it: the file, and its brotli and gzip forms made by the build. */
interface CompressedAsset {
  type: string;
  raw: Buffer;
  br: Buffer;
  gzip: Buffer;
}

const ASSET_TYPES: Record<string, string> = { ".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8" };

/** The assets the build compressed (each `.js` and `.css` with its `.br` and `.gz` beside it), read once. */
function compressedAssets(assets: string): Map<string, CompressedAsset> {
  const found = new Map<string, CompressedAsset>();
  for (const file of readdirSync(assets)) {
    const type = ASSET_TYPES[extname(file)];
    if (!type || !existsSync(join(assets, `${file}.br`)) || !existsSync(join(assets, `${file}.gz`))) continue;
    found.set(file, { type, raw: readFileSync(join(assets, file)), br: readFileSync(join(assets, `${file}.br`)), gzip: readFileSync(join(assets, `${file}.gz`)) });
  }
  return found;
}
