import type { CommandModule } from "yargs";
import type { Machine } from "../../../relay/admin-contract/index.js";
import { adminCall } from "../../admin-client.js";
import { humanBytes, keyValues, print, table } from "../../output.js";
import { allPages, adminOptions, target, when, type AdminArgs } from "./common.js";

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
          const m = await adminCall(target(a), "POST /admin/v1/machines", { body: { org: a.org, name: a.name } });
          print(a, { id: m.id, name: m.name, token: m.token, install_command: m.install_command, install_refused: m.install_refused, reach_warning: m.reach_warning, ca_sha256: m.ca_sha256 }, () =>
            keyValues([["id", m.id], ["name", m.name], ["token", `${m.token}  (shown this once)`], ...installLines(m), ["link CA sha256", m.ca_sha256 ?? "(none)"]]),
          );
        },
      })
      .command({
        command: "list",
        describe: "List machines with state and hardware",
        builder: (b) => adminOptions(b.option("org", { type: "string", demandOption: true })),
        handler: async (argv) => {
          const a = argv as unknown as AdminArgs & { org: string };
          const data = await allPages((page, perPage) => adminCall(target(a), "GET /admin/v1/machines", { query: { org: a.org, page, per_page: perPage } }));
          print(a, data, () => table(["ID", "NAME", "STATE", "LAST SEEN", "HARDWARE"], data.map((m) => [m.id, m.name, m.revoked_at ? "revoked" : m.state, when(m.last_seen_at), hardwareSummary(m)])));
        },
      })
      .command({
        command: "revoke <id>",
        describe: "Revoke a machine: its link drops at once and its token never works again",
        builder: (b) => adminOptions(b.positional("id", { type: "string", demandOption: true })),
        handler: async (argv) => {
          const a = argv as unknown as AdminArgs & { id: string };
          const m = await adminCall(target(a), "POST /admin/v1/machines/:id/revoke", { params: { id: a.id } });
          print(a, m, () => keyValues([["id", m.id], ["name", m.name], ["state", "revoked"]]));
        },
      })
      .command({
        command: "rotate-token <id>",
        describe: "Give a machine a new token (printed once); the old one stops working and the link drops",
        builder: (b) => adminOptions(b.positional("id", { type: "string", demandOption: true })),
        handler: async (argv) => {
          const a = argv as unknown as AdminArgs & { id: string };
          const m = await adminCall(target(a), "POST /admin/v1/machines/:id/rotate-token", { params: { id: a.id } });
          print(a, { id: m.id, name: m.name, token: m.token, install_command: m.install_command, install_refused: m.install_refused, reach_warning: m.reach_warning, ca_sha256: m.ca_sha256 }, () =>
            keyValues([["id", m.id], ["token", `${m.token}  (shown this once)`], ...installLines(m), ["link CA sha256", m.ca_sha256 ?? "(none)"]]),
          );
        },
      })
      .command({
        command: "rename <id> <name>",
        describe: "Give a machine a new name",
        builder: (b) => adminOptions(b.positional("id", { type: "string", demandOption: true }).positional("name", { type: "string", demandOption: true })),
        handler: async (argv) => {
          const a = argv as unknown as AdminArgs & { id: string; name: string };
          const m = await adminCall(target(a), "PATCH /admin/v1/machines/:id", { params: { id: a.id }, body: { name: a.name } });
          print(a, m, () => keyValues([["id", m.id], ["name", m.name]]));
        },
      })
      .command({
        command: "delete <id>",
        describe: "Delete a machine that never joined, or that is revoked, once no stack names it",
        builder: (b) => adminOptions(b.positional("id", { type: "string", demandOption: true })),
        handler: async (argv) => {
          const a = argv as unknown as AdminArgs & { id: string };
          const gone = await adminCall(target(a), "DELETE /admin/v1/machines/:id", { params: { id: a.id } });
          print(a, gone, () => `Deleted ${gone.id}.`);
        },
      })
      .demandCommand(1)
      .strict(),
  handler: () => {},
};

/** The install command with what it asks for, or why there is none. */
function installLines(m: { install_command: string | null; install_refused: string | null; reach_warning: string | null }): [string, string][] {
  if (m.install_command === null) return [["install", m.install_refused ?? "(none)"]];
  return [
    ["install", m.install_command],
    ["", "(run it on the machine; it asks for the token above, which then lands in no shell history)"],
    ...(m.reach_warning ? [["warning", `This command works on this computer only. ${m.reach_warning}`] as [string, string]] : []),
  ];
}
