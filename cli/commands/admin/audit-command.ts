import type { Argv, CommandModule } from "yargs";
import type { AuditEvent } from "../../../relay/admin-contract/index.js";
import { adminCall, adminExport } from "../../admin-client.js";
import { print, table } from "../../output.js";
import { adminOptions, target, when, type AdminArgs } from "./common.js";

const actor = (e: AuditEvent) => (e.actor.kind === "operator" ? "operator (admin token)" : e.actor.kind === "bootstrap" ? "makina up" : e.actor.kind === "anonymous" ? `not signed in (${e.actor.login ?? "-"})` : (e.actor.login ?? e.actor.id ?? "-"));
const targetOf = (e: AuditEvent) => (e.target ? `${e.target.kind} ${e.target.name ?? e.target.id}` : "-");
const detailOf = (e: AuditEvent) => (e.detail ? Object.entries(e.detail).map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(" ") : "");

/** What the audit log is filtered by, on the command line. */
interface Filter {
  org: string;
  action?: string;
  actor?: string;
  target?: string;
  since?: string;
  until?: string;
}

/** The filters `list` and `export` share. */
const filters = <T>(b: Argv<T>) =>
  b
    .option("org", { type: "string", demandOption: true })
    .option("action", { type: "string", describe: "Only this action (sign_in, user.disabled, key.revoked…) or family (user, key, machine, stack, org)" })
    .option("actor", { type: "string", describe: "Only by this person: their id, or words of their login" })
    .option("target", { type: "string", describe: "Only to this: its id (a key's, a stack's…), or words of its name" })
    .option("since", { type: "string", describe: "From this time on (2026-11-01, 2026-11-01T09:00:00Z)" })
    .option("until", { type: "string", describe: "Before this time" });

const filterOf = (a: Filter) => ({ org: a.org, action: a.action, actor: a.actor, target: a.target, since: a.since as never, until: a.until as never });

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
            filters(b)
              .option("limit", { type: "number", default: 50, describe: "How many events (1 to 500)" })
              .option("before", { type: "string", describe: "Only events before this one (the `next` of the previous page)" }),
          ),
        handler: async (argv) => {
          const a = argv as unknown as AdminArgs & Filter & { limit: number; before?: string };
          const page = await adminCall(target(a), "GET /admin/v1/audit", { query: { ...filterOf(a), limit: a.limit, before: a.before } });
          print(a, page, () => {
            const rows = table(
              ["WHEN", "ACTION", "OUTCOME", "WHO", "FROM", "TARGET", "DETAIL"],
              page.data.map((e) => [when(e.at), e.action, e.outcome, actor(e), e.address ?? "-", targetOf(e), detailOf(e)]),
            );
            return page.next ? `${rows}\nMore: --before ${page.next}` : rows;
          });
        },
      })
      .command({
        command: "export",
        describe: "Write an organization's audit events as CSV to stdout, newest first (the same filters as list)",
        builder: (b) => adminOptions(filters(b)),
        handler: async (argv) => {
          const a = argv as unknown as AdminArgs & Filter;
          await adminExport(target(a), "GET /admin/v1/audit.csv", filterOf(a), process.stdout);
        },
      })
      .demandCommand(1)
      .strict(),
  handler: () => {},
};
