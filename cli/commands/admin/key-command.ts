import type { CommandModule } from "yargs";
import type { ApiKey } from "../../../relay/admin-contract/index.js";
import { adminCall } from "../../admin-client.js";
import { keyValues, print, table } from "../../output.js";
import { adminOptions, target, when, type AdminArgs } from "./common.js";

const restrictions = (k: ApiKey) => [k.stack_ids ? `stacks ${k.stack_ids.join(",")}` : "", k.machine_ids ? `machines ${k.machine_ids.join(",")}` : ""].filter(Boolean).join("; ") || "none";
const limits = (k: ApiKey) => [k.rpm ? `${k.rpm} rpm` : "", k.tpm ? `${k.tpm} tpm` : ""].filter(Boolean).join(", ") || "none";

export const keyCommand: CommandModule = {
  command: "key <command>",
  describe: "Manage API keys",
  builder: (y) =>
    y
      .command({
        command: "create",
        describe: "Create an API key; prints it once",
        builder: (b) =>
          adminOptions(
            b
              .option("org", { type: "string", demandOption: true })
              .option("name", { type: "string" })
              .option("stack", { type: "string", array: true, describe: "Restrict to this stack (repeatable)" })
              .option("machine", { type: "string", array: true, describe: "Restrict to this machine (repeatable)" })
              .option("rpm", { type: "number", describe: "Requests per minute" })
              .option("tpm", { type: "number", describe: "Tokens per minute" }),
          ),
        handler: async (argv) => {
          const a = argv as unknown as AdminArgs & { org: string; name?: string; stack?: string[]; machine?: string[]; rpm?: number; tpm?: number };
          const k = await adminCall(target(a), "POST /admin/v1/keys", { body: { org: a.org, name: a.name, stacks: a.stack, machines: a.machine, rpm: a.rpm, tpm: a.tpm } });
          print(a, k, () =>
            keyValues([["id", k.id], ["key", `${k.key}  (shown this once)`], ["restrictions", restrictions(k)], ["limits", limits(k)]]),
          );
        },
      })
      .command({
        command: "list",
        describe: "List keys (never their secrets)",
        builder: (b) => adminOptions(b.option("org", { type: "string", demandOption: true })),
        handler: async (argv) => {
          const a = argv as unknown as AdminArgs & { org: string };
          const { data } = await adminCall(target(a), "GET /admin/v1/keys", { query: { org: a.org } });
          print(a, data, () => table(["ID", "NAME", "PREFIX", "STATE", "RESTRICTIONS", "LIMITS", "LAST USED"], data.map((k) => [k.id, k.name, `${k.prefix}…`, k.state, restrictions(k), limits(k), when(k.last_used_at)])));
        },
      })
      .command({
        command: "revoke <id>",
        describe: "Revoke a key; the gateway rejects it from the next request on",
        builder: (b) => adminOptions(b.positional("id", { type: "string", demandOption: true })),
        handler: async (argv) => {
          const a = argv as unknown as AdminArgs & { id: string };
          const k = await adminCall(target(a), "POST /admin/v1/keys/:id/revoke", { params: { id: a.id } });
          print(a, k, () => keyValues([["id", k.id], ["state", k.state]]));
        },
      })
      .demandCommand(1)
      .strict(),
  handler: () => {},
};
