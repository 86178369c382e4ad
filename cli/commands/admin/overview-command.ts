import type { CommandModule } from "yargs";
import type { Overview } from "../../../relay/admin-contract/index.js";
import { adminCall } from "../../admin-client.js";
import { humanBytes, print, table } from "../../output.js";
import { adminOptions, target, type AdminArgs } from "./common.js";

const ms = (n: number | null) => (n === null ? "-" : `${n} ms`);
const percent = (n: number | null) => (n === null ? "-" : `${Math.round(n)}%`);
const memory = (used: number, total: number) => (total > 0 ? `${humanBytes(used)} of ${humanBytes(total)}` : humanBytes(used));

/** The overview as a person reads it in a terminal. */
export function overviewText(o: Overview): string {
  const m = o.machines;
  const s = o.stacks;
  const r = o.requests;
  const lines = [
    `Machines: ${m.online} online, ${m.offline} offline, ${m.pending} pending${m.revoked ? `, ${m.revoked} revoked` : ""}`,
    `Stacks:   ${s.by_state.deployed} deployed (${s.runtimes.ready} ready, ${s.runtimes.loading} loading, ${s.runtimes.failed} failed, ${s.runtimes.unloaded ? `${s.runtimes.unloaded} unloaded until a request, ` : ""}${s.runtimes.offline} on offline machines), ${s.by_state.deploying} deploying, ${s.by_state.failed} failed, ${s.by_state.draft} drafts`,
    `Requests: ${r.requests_per_minute}/min, ${r.tokens_per_second} tokens/s now; last hour ${r.requests} (${r.errors} errors${r.error_rate === null ? "" : `, ${(r.error_rate * 100).toFixed(1)}%`}), p50 ${ms(r.p50_ms)}, p95 ${ms(r.p95_ms)}${r.decode_tokens_per_second === null ? "" : `, runtimes ${r.decode_tokens_per_second} tokens/s`}`,
  ];
  if (o.loads.length > 0) {
    lines.push(
      "",
      table(
        ["MACHINE", "CPU", "MEMORY", "GPU", "GPU BUSY", "GPU MEMORY"],
        o.loads.flatMap((l) => {
          const first = [l.name, percent(l.cpu_percent), memory(l.memory_used_bytes, l.memory_total_bytes)];
          if (l.gpus.length === 0) return [[...first, "-", "-", "-"]];
          return l.gpus.map((g, i) => [...(i === 0 ? first : ["", "", ""]), `${g.index} ${g.name}`, percent(g.utilization_percent), memory(g.memory_used_bytes, g.memory_total_bytes)]);
        }),
      ),
    );
  }
  return lines.join("\n");
}

export const overviewCommand: CommandModule = {
  command: "overview",
  describe: "What an organization runs and how hard: machines and their load, stacks, the last minute's and hour's requests",
  builder: (b) =>
    adminOptions(
      b
        .option("org", { type: "string", demandOption: true })
        .option("machine", { type: "string", describe: "Only this machine (its id)", conflicts: "stack" })
        .option("stack", { type: "string", describe: "Only this stack (its id)" }),
    ),
  handler: async (argv) => {
    const a = argv as unknown as AdminArgs & { org: string; machine?: string; stack?: string };
    const o = await adminCall(target(a), "GET /admin/v1/overview", { query: { org: a.org, machine: a.machine, stack: a.stack } });
    print(a, o, () => overviewText(o));
  },
};
