import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "../helpers/models.js";

/** The most JavaScript the web application may send, gzip-compressed (issue 21, point 9). */
const BUDGET = 150 * 1024;

// The web application as `npm run build` makes it (npm test builds first): what a browser downloads on first visit.
describe("the web application's bundle", () => {
  it(`stays within ${BUDGET / 1024} KiB of compressed JavaScript, with nothing loaded from elsewhere`, () => {
    const assets = join(REPO_ROOT, "dist", "web", "assets");
    const scripts = readdirSync(assets).filter((f) => f.endsWith(".js"));
    expect(scripts).toHaveLength(1);
    const compressed = scripts.reduce((n, f) => n + gzipSync(readFileSync(join(assets, f)), { level: 9 }).length, 0);
    expect(compressed).toBeGreaterThan(10 * 1024);
    expect(compressed).toBeLessThanOrEqual(BUDGET);
    // Everything it runs is in it: no script or stylesheet from another origin.
    const html = readFileSync(join(REPO_ROOT, "dist", "web", "index.html"), "utf8");
    expect(html).not.toMatch(/(src|href)="(https?:)?\/\//);
  });
});
