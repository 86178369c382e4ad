import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { dirname, join, resolve } from "node:path";

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");

/** The repository root. */
export const REPO_ROOT = repoRoot;

/** A real GGUF model for tests: `MAKINA_TEST_MODEL`, else `../shared/models/stories260K.gguf`. */
export function testModelPath(name = "stories260K.gguf"): string {
  const fromEnv = process.env.MAKINA_TEST_MODEL;
  const path = fromEnv && name === "stories260K.gguf" ? resolve(fromEnv) : join(repoRoot, "..", "shared", "models", name);
  if (!existsSync(path)) throw new Error(`Test model not found at ${path}; set MAKINA_TEST_MODEL or put ../shared/models beside the repository.`);
  return path;
}

