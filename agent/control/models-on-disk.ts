import { basename } from "node:path";
import type { ModelOnDisk as ReportedModel } from "../../proto/index.js";
import type { CachedModel } from "../models/model-store.js";
import type { HostedStack } from "../stacks/stack-host.js";

/** A model file on this machine's disk, as `makina model list` and the relay's machine page show it. */
export interface ModelOnDisk extends ReportedModel {
  /** Where it came from: the URL it was downloaded from, or the reference a stack gave. */
  source: string;
}

/** Models on disk: the download cache plus local files that stacks use in place. */
export function modelsOnDisk(cached: CachedModel[], runtimes: HostedStack[]): ModelOnDisk[] {
  const byPath = new Map<string, ModelOnDisk>();
  for (const m of cached) byPath.set(m.path, { name: basename(new URL(m.source).pathname), format: "gguf", sizeBytes: m.sizeBytes, path: m.path, sha256: m.sha256, source: m.source, stackIds: [] });
  for (const r of runtimes) {
    if (!r.modelPath) continue;
    const entry = byPath.get(r.modelPath) ?? { name: basename(r.modelPath), format: "gguf", sizeBytes: r.modelSizeBytes ?? 0, path: r.modelPath, sha256: r.modelSha256 ?? "", source: r.modelRef, stackIds: [] };
    entry.stackIds.push(r.stackId);
    byPath.set(r.modelPath, entry);
  }
  return [...byPath.values()];
}
