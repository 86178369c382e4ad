import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** The version in the nearest package.json named one of `names` at or above `dir`. */
function versionAbove(dir: string, ...names: string[]): string | undefined {
  for (let d = dir; d !== dirname(d); d = dirname(d)) {
    const file = join(d, "package.json");
    if (existsSync(file)) {
      const pkg = JSON.parse(readFileSync(file, "utf8")) as { name?: string; version?: string };
      if (pkg.name && names.includes(pkg.name) && pkg.version) return pkg.version;
    }
  }
  return undefined;
}

/**
 * This build's version, from the package.json above this file: the checkout's or the full package's (`makina`),
 * or the agent package's that a relay serves to machines (`makina-agent`); from sources and from dist/ alike.
 */
export function agentVersion(): string {
  return versionAbove(dirname(fileURLToPath(import.meta.url)), "makina", "makina-agent") ?? "0.0.0";
}

/** The installed version of a dependency, for `runtime list`. */
export function dependencyVersion(name: string): string {
  try {
    return versionAbove(dirname(createRequire(import.meta.url).resolve(name)), name) ?? "unknown";
  } catch {
    return "unknown";
  }
}
