import { existsSync } from "node:fs";

/** Debian's Chromium for the browser tests (MAKINA_CHROMIUM overrides where it is). */
export function chromiumPath(): string {
  const path = process.env.MAKINA_CHROMIUM ?? ["/usr/bin/chromium", "/usr/bin/chromium-browser"].find((p) => existsSync(p));
  if (!path) throw new Error("The browser tests need Chromium: apt-get install -y chromium (or set MAKINA_CHROMIUM).");
  return path;
}
