import { readdirSync, readFileSync } from "node:fs";
import { join, relative, resolve, dirname } from "node:path";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "./helpers/models.js";

/** Which top-level areas each area may import: agent → proto, relay → proto, cli → all. */
const ALLOWED: Record<string, string[]> = {
  proto: ["proto"],
  agent: ["agent", "proto"],
  relay: ["relay", "proto"],
  cli: ["cli", "agent", "relay", "proto"],
};

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return e.name === "node_modules" ? [] : sources(p);
    return /\.tsx?$/.test(e.name) ? [p] : [];
  });
}

describe("repository rules", () => {
  const files = Object.keys(ALLOWED).flatMap((area) => sources(join(REPO_ROOT, area)).map((file) => ({ area, file })));

  it("keeps dependencies pointing one way: agent and relay never import each other", () => {
    const violations: string[] = [];
    let scanned = 0;
    for (const { area, file } of files) {
      for (const [, spec] of readFileSync(file, "utf8").matchAll(/(?:from|import)\s*\(?\s*["'](\.{1,2}\/[^"']+)["']/g)) {
        scanned++;
        const target = relative(REPO_ROOT, resolve(dirname(file), spec!)).split("/")[0]!;
        if (!ALLOWED[area]!.includes(target)) violations.push(`${relative(REPO_ROOT, file)} imports ${spec}`);
      }
    }
    expect(scanned).toBeGreaterThan(100);
    expect(violations).toEqual([]);
  });

  it("writes no console output outside the CLI", () => {
    const offenders = files.filter(({ area, file }) => area !== "cli" && /\bconsole\.(log|error|warn|info|debug)\(/.test(readFileSync(file, "utf8")));
    expect(offenders.map((f) => relative(REPO_ROOT, f.file))).toEqual([]);
  });

  it("reads process.env only in composition roots and the CLI, never at import time", () => {
    const offenders = files.filter(({ area, file }) => area !== "cli" && /process\.env/.test(readFileSync(file, "utf8")));
    expect(offenders.map((f) => relative(REPO_ROOT, f.file))).toEqual([]);
  });
});
