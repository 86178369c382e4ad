import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** The version in the nearest package.json named `name` at or above `dir`. */
function versionAbove(dir: string, name: string): string | undefined {
  for (let d = dir; d !== dirname(d); d = dirname(d)) {
    const file = join(d, "package.json");
    if (existsSync(file)) {
      const pkg = JSON.parse(readFileSync(file, "utf8")) as { name?: string; version?: string };
      if (pkg.name === name && pkg.version) return pkg.version;
    }
  }
  return undefined;
}

/** This build's version, from the package.json above this file (works from sources and from dist/). */
export function agentVersion(): string {
  return versionAbove(dirname(fileURLToPath(import.meta.url)), "makina") ?? "0.0.0";
}

/** The installed version of a dependency, for `runtime list`. */
export function dependencyVersion(name: string): string {
  try {
    return versionAbove(dirname(createRequire(import.meta.url).resolve(name)), name) ?? "unknown";
  } catch {
    return "unknown";
  }
}
