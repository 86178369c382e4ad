import type { CommandModule } from "yargs";
import { adminRequest } from "../../admin-client.js";
import { humanBytes, keyValues, print, table } from "../../output.js";
import { adminOptions, target, when, type AdminArgs } from "./common.js";

interface Machine {
  id: string;
  name: string;
  state: string;
  token?: string;
  install_command?: string;
  ca_sha256?: string | null;
  last_seen_at: number | null;
  revoked_at: number | null;
  hardware: { platform: string; arch: string; cpu_model: string; cpu_logical_cores: number; memory_bytes: number; gpus: { model: string; vram_bytes: number }[] } | null;
}

const hardwareSummary = (m: Machine) =>
  m.hardware
    ? `${m.hardware.platform}/${m.hardware.arch}, ${m.hardware.cpu_logical_cores} CPUs, ${humanBytes(m.hardware.memory_bytes)} RAM${m.hardware.gpus.length ? `, ${m.hardware.gpus.map((g) => `${g.model}${g.vram_bytes ? ` ${humanBytes(g.vram_bytes)}` : ""}`).join(", ")}` : ", no GPU"}`
    : "unknown (never connected)";

export const machineCommand: CommandModule = {
  command: "machine <command>",
  describe: "Manage machines",
  builder: (y) =>
    y
      .command({
        command: "create",
        describe: "Register a machine; prints its token once",
        builder: (b) => adminOptions(b.option("org", { type: "string", demandOption: true }).option("name", { type: "string", demandOption: true })),
        handler: async (argv) => {
          const a = argv as unknown as AdminArgs & { org: string; name: string };
          const m = await adminRequest<Machine>(target(a), "POST", "/machines", { org: a.org, name: a.name });
          print(a, { id: m.id, name: m.name, token: m.token, install_command: m.install_command, ca_sha256: m.ca_sha256 ?? null }, () =>
            keyValues([["id", m.id], ["name", m.name], ["token", `${m.token}  (shown this once)`], ["install", m.install_command], ["link CA sha256", m.ca_sha256 ?? "(none)"]]),
          );
        },
      })
      .command({
        command: "list",
        describe: "List machines with state and hardware",
        builder: (b) => adminOptions(b.option("org", { type: "string", demandOption: true })),
        handler: async (argv) => {
          const a = argv as unknown as AdminArgs & { org: string };
          const { data } = await adminRequest<{ data: Machine[] }>(target(a), "GET", `/machines?org=${encodeURIComponent(a.org)}`);
          print(a, data, () => table(["ID", "NAME", "STATE", "LAST SEEN", "HARDWARE"], data.map((m) => [m.id, m.name, m.revoked_at ? "revoked" : m.state, when(m.last_seen_at), hardwareSummary(m)])));
        },
      })
      .command({
        command: "revoke <id>",
        describe: "Revoke a machine: its link drops at once and its token never works again",
        builder: (b) => adminOptions(b.positional("id", { type: "string", demandOption: true })),
        handler: async (argv) => {
          const a = argv as unknown as AdminArgs & { id: string };
          const m = await adminRequest<Machine>(target(a), "POST", `/machines/${encodeURIComponent(a.id)}/revoke`);
          print(a, m, () => keyValues([["id", m.id], ["name", m.name], ["state", "revoked"]]));
        },
      })
      .command({
        command: "rotate-token <id>",
        describe: "Give a machine a new token (printed once); the old one stops working and the link drops",
        builder: (b) => adminOptions(b.positional("id", { type: "string", demandOption: true })),
        handler: async (argv) => {
          const a = argv as unknown as AdminArgs & { id: string };
          const m = await adminRequest<Machine>(target(a), "POST", `/machines/${encodeURIComponent(a.id)}/rotate-token`);
          print(a, { id: m.id, name: m.name, token: m.token, install_command: m.install_command, ca_sha256: m.ca_sha256 ?? null }, () =>
            keyValues([["id", m.id], ["token", `${m.token}  (shown this once)`], ["install", m.install_command], ["link CA sha256", m.ca_sha256 ?? "(none)"]]),
          );
        },
      })
      .demandCommand(1)
      .strict(),
  handler: () => {},
};
