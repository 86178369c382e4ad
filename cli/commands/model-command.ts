import type { CommandModule } from "yargs";
import { modelsOnDisk, type AgentStatus } from "../../agent/control/index.js";
import { humanBytes, print, table } from "../output.js";
import { localOptions, requireStatus, type LocalArgs } from "./local-agent.js";

/** Models on disk as `model list --json` prints them (snake_case, like the admin API). */
export function modelsOnDiskRows(s: AgentStatus) {
  return modelsOnDisk(s.models, s.runtimes).map((m) => ({ name: m.name, format: m.format, size_bytes: m.sizeBytes, path: m.path, sha256: m.sha256, source: m.source, stacks: m.stackIds }));
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
          const rows = modelsOnDiskRows(await requireStatus(argv));
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
