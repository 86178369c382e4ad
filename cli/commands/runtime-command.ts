import type { CommandModule } from "yargs";
import { sizeInWords } from "../../proto/index.js";
import { print, table } from "../output.js";
import { localOptions, requireStatus, type LocalArgs } from "./local-agent.js";

export const runtimeCommand: CommandModule = {
  command: "runtime <command>",
  describe: "Runtimes on this machine",
  builder: (y) =>
    y
      .command({
        command: "list",
        describe: "Installed runtimes: name, version, state, local endpoint, model served",
        builder: (b) => localOptions(b),
        handler: async (raw) => {
          const argv = raw as unknown as LocalArgs;
          const s = await requireStatus(argv);
          const rows = s.runtimes.map((r) => ({
            name: r.runtime,
            version: r.version,
            state: r.state,
            residency: r.residency,
            endpoint: r.endpoint,
            model: r.modelId,
            stack_id: r.stackId,
            context_size: r.contextSize,
            error: r.error,
            since: r.since,
            pid: r.pid,
            memory_bytes: r.memoryBytes,
          }));
          const m = s.memory;
          const limits = [
            m.budgetBytes ? `memory ${sizeInWords(m.usedBytes)} of ${sizeInWords(m.budgetBytes)} (--memory-budget)` : `memory ${sizeInWords(m.usedBytes)}, no budget`,
            `${m.loaded} loaded${m.maxLoaded ? ` of ${m.maxLoaded} (--max-loaded)` : ""}`,
          ].join("; ");
          print(argv, rows, () =>
            rows.length
              ? `${table(["NAME", "VERSION", "STATE", "MEMORY", "ENDPOINT", "MODEL", "STACK"], rows.map((r) => [r.name, r.version, `${r.state}${r.residency === "on_demand" ? " (on demand)" : ""}${r.error ? `: ${r.error}` : ""}`, r.memory_bytes ? `~${sizeInWords(r.memory_bytes)}` : "-", r.endpoint, r.model, r.stack_id]))}\nLoaded runtimes: ${limits}.`
              : "No runtimes yet: deploy a stack to this machine.",
          );
        },
      })
      .demandCommand(1)
      .strict(),
  handler: () => {},
};
