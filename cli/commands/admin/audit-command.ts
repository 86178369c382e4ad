import type { CommandModule } from "yargs";
import type { AuditEvent } from "../../../relay/admin-contract/index.js";
import { adminCall } from "../../admin-client.js";
import { print, table } from "../../output.js";
import { adminOptions, target, when, type AdminArgs } from "./common.js";

const actor = (e: AuditEvent) => (e.actor.kind === "operator" ? "operator (admin token)" : e.actor.kind === "bootstrap" ? "makina up" : e.actor.kind === "anonymous" ? `not signed in (${e.actor.login ?? "-"})` : (e.actor.login ?? e.actor.id ?? "-"));
const targetOf = (e: AuditEvent) => (e.target ? `${e.target.kind} ${e.target.name ?? e.target.id}` : "-");
const detailOf = (e: AuditEvent) => (e.detail ? Object.entries(e.detail).map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(" ") : "");

export const auditCommand: CommandModule = {
  command: "audit <command>",
  describe: "Read an organization's audit log (sign-ins, people, keys, machines, stacks, limits)",
  builder: (y) =>
    y
      .command({
        command: "list",
        describe: "List an organization's audit events, newest first",
        builder: (b) =>
          adminOptions(
            b
              .option("org", { type: "string", demandOption: true })
              .option("limit", { type: "number", default: 50, describe: "How many events (1 to 500)" })
              .option("action", { type: "string", describe: "Only this action (sign_in, user.disabled, key.revoked…) or family (user, key, machine, stack, org)" })
              .option("before", { type: "string", describe: "Only events before this one (the `next` of the previous page)" }),
          ),
        handler: async (argv) => {
          const a = argv as unknown as AdminArgs & { org: string; limit: number; action?: string; before?: string };
          const page = await adminCall(target(a), "GET /admin/v1/audit", { query: { org: a.org, limit: a.limit, action: a.action, before: a.before } });
          print(a, page, () => {
            const rows = table(
              ["WHEN", "ACTION", "OUTCOME", "WHO", "FROM", "TARGET", "DETAIL"],
              page.data.map((e) => [when(e.at), e.action, e.outcome, actor(e), e.address ?? "-", targetOf(e), detailOf(e)]),
            );
            return page.next ? `${rows}\nMore: --before ${page.next}` : rows;
          });
        },
      })
      .demandCommand(1)
      .strict(),
  handler: () => {},
};
