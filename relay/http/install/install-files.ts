import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** The agent package a relay serves to the machines joining it (built by `npm run build` into dist/install). */
export interface AgentPackage {
  /** Its file name, `makina-agent-<version>.tgz`, served at `/install/<file>`. */
  readonly file: string;
  readonly version: string;
  /** SHA-256 (hex) of the file, which the install script checks after downloading it. */
  readonly sha256: string;
  readonly bytes: Buffer;
}

/** What `/install.sh` and `/install/…` serve: null parts were not built. */
export interface InstallFiles {
  readonly script: Buffer | null;
  readonly agentPackage: AgentPackage | null;
}

const PACKAGE_FILE = /^makina-agent-(\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?)\.tgz$/;

/** The built install files (`dist/install`, beside the relay's code or above it when running from sources), or null. */
export function findInstallDir(): string | null {
  // This file is relay/http/install/ of the sources or of dist/: three levels up is the repository or dist/, and
  // the build puts the install files in dist/install. Only there: nothing planted above is ever served as root's script.
  const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..");
  for (const candidate of [join(root, "install"), join(root, "dist", "install")]) {
    if (existsSync(join(candidate, "install.sh"))) return candidate;
  }
  return null;
}

/** Reads the install script and the agent package from `dir` once, at start. */
export function loadInstallFiles(dir: string | null): InstallFiles {
  if (!dir) return { script: null, agentPackage: null };
  const script = existsSync(join(dir, "install.sh")) ? readFileSync(join(dir, "install.sh")) : null;
  const files = existsSync(dir) ? readdirSync(dir).filter((f) => PACKAGE_FILE.test(f)) : [];
  if (files.length !== 1) return { script, agentPackage: null };
  const file = files[0]!;
  const bytes = readFileSync(join(dir, file));
  return { script, agentPackage: { file, version: PACKAGE_FILE.exec(file)![1]!, sha256: createHash("sha256").update(bytes).digest("hex"), bytes } };
}
