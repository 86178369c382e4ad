import { basename } from "node:path";
import type { CommandModule } from "yargs";
import type { AgentStatus } from "../../agent/control/agent-status.js";
import { humanBytes, print, table } from "../output.js";
import { localOptions, requireStatus, type LocalArgs } from "./local-agent.js";

/** Models on disk: the download cache plus local files that stacks use in place. */
export function modelsOnDisk(s: AgentStatus) {
  const byPath = new Map<string, { name: string; format: string; size_bytes: number; path: string; sha256: string; source: string; stacks: string[] }>();
  for (const m of s.models) byPath.set(m.path, { name: basename(new URL(m.source).pathname), format: "gguf", size_bytes: m.sizeBytes, path: m.path, sha256: m.sha256, source: m.source, stacks: [] });
  for (const r of s.runtimes) {
    if (!r.modelPath) continue;
    const entry = byPath.get(r.modelPath) ?? { name: basename(r.modelPath), format: "gguf", size_bytes: r.modelSizeBytes ?? 0, path: r.modelPath, sha256: r.modelSha256 ?? "", source: r.modelRef, stacks: [] };
    entry.stacks.push(r.stackId);
    byPath.set(r.modelPath, entry);
  }
  return [...byPath.values()];
}

export const modelCommand: CommandModule = {
  command: "model <command>",
  describe: "Models on this machine",
  builder: (y) =>
    y
      .command({
        command: "list",
        describe: "Models on disk: name, format, size, path, sha256, which stack uses it",
        builder: (b) => localOptions(b),
        handler: async (raw) => {
          const argv = raw as unknown as LocalArgs;
          const rows = modelsOnDisk(await requireStatus(argv));
          print(argv, rows, () =>
            rows.length
              ? table(["NAME", "FORMAT", "SIZE", "SHA256", "USED BY", "PATH"], rows.map((m) => [m.name, m.format, humanBytes(m.size_bytes), m.sha256.slice(0, 12), m.stacks.join(", ") || "-", m.path]))
              : "No models on disk yet.",
          );
        },
      })
      .demandCommand(1)
      .strict(),
  handler: () => {},
};
