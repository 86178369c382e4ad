import type { CommandModule } from "yargs";
import type { AlertWebhook } from "../../../relay/admin-contract/index.js";
import { adminCall } from "../../admin-client.js";
import { CliError, EXIT } from "../../cli-error.js";
import { keyValues, print, table } from "../../output.js";
import { adminOptions, target, when, type AdminArgs } from "./common.js";

const eventsText = (w: AlertWebhook) => w.events.join(", ");

export const alertCommand: CommandModule = {
  command: "alert <command>",
  describe: "Manage the organization's alert webhooks (admins)",
  builder: (y) =>
    y
      .command({
        command: "create",
        describe: "Add a webhook; prints its signing secret (whsec_…) once",
        builder: (b) =>
          adminOptions(
            b
              .option("org", { type: "string", demandOption: true })
              .option("url", { type: "string", demandOption: true, describe: "Where the events are POSTed (https; a Slack incoming webhook works as is)" })
              .option("event", { type: "string", array: true, demandOption: true, describe: "An event it wants (repeatable): budget.threshold, machine.offline, runtime.failed, error_rate, key.expiring" })
              .option("name", { type: "string" })
              .option("offline-after", { type: "number", describe: "Seconds a machine is offline before it is told (default 300)" })
              .option("error-rate", { type: "number", describe: "Percent of requests failing over 5 minutes that is told (default 10)" }),
          ),
        handler: async (argv) => {
          const a = argv as unknown as AdminArgs & { org: string; url: string; event: string[]; name?: string; offlineAfter?: number; errorRate?: number };
          const w = await adminCall(target(a), "POST /admin/v1/alerts", {
            body: { org: a.org, url: a.url, events: a.event, name: a.name, machine_offline_after_s: a.offlineAfter, error_rate_percent: a.errorRate },
          });
          print(a, w, () => keyValues([["id", w.id], ["url", w.url], ["events", eventsText(w)], ["secret", `${w.secret}  (shown this once: receivers check signatures with it)`]]));
        },
      })
      .command({
        command: "list",
        describe: "List the organization's webhooks (never their secrets)",
        builder: (b) => adminOptions(b.option("org", { type: "string", demandOption: true })),
        handler: async (argv) => {
          const a = argv as unknown as AdminArgs & { org: string };
          const { data } = await adminCall(target(a), "GET /admin/v1/alerts", { query: { org: a.org } });
          print(a, data, () => table(["ID", "NAME", "URL", "EVENTS", "OFFLINE AFTER", "ERROR RATE"], data.map((w) => [w.id, w.name, w.url, eventsText(w), `${w.machine_offline_after_s} s`, `${w.error_rate_percent}%`])));
        },
      })
      .command({
        command: "test <id>",
        describe: "Send the webhook a test event now",
        builder: (b) => adminOptions(b.positional("id", { type: "string", demandOption: true })),
        handler: async (argv) => {
          const a = argv as unknown as AdminArgs & { id: string };
          const r = await adminCall(target(a), "POST /admin/v1/alerts/:id/test", { params: { id: a.id } });
          print(a, r, () => `A test event is on its way to ${a.id}: see \`makina admin alert deliveries ${a.id}\`.`);
        },
      })
      .command({
        command: "deliveries <id>",
        describe: "The webhook's last deliveries and how each went",
        builder: (b) => adminOptions(b.positional("id", { type: "string", demandOption: true })),
        handler: async (argv) => {
          const a = argv as unknown as AdminArgs & { id: string };
          const { data } = await adminCall(target(a), "GET /admin/v1/alerts/:id/deliveries", { params: { id: a.id }, query: { per_page: 50 } });
          print(a, data, () =>
            table(
              ["WHEN", "EVENT", "STATE", "TRIES", "LAST ANSWER"],
              data.map((d) => [when(d.created_at), d.event_type, d.state, String(d.attempts), d.last_error ?? (d.last_status === null ? "-" : String(d.last_status))]),
            ),
          );
        },
      })
      .command({
        command: "delete <id>",
        describe: "Remove a webhook, its secret and its deliveries",
        builder: (b) => adminOptions(b.positional("id", { type: "string", demandOption: true })),
        handler: async (argv) => {
          const a = argv as unknown as AdminArgs & { id: string };
          const r = await adminCall(target(a), "DELETE /admin/v1/alerts/:id", { params: { id: a.id } });
          print(a, r, () => `Removed ${a.id}.`);
        },
      })
      .demandCommand(1)
      .strict(),
  handler: () => {
    throw new CliError("Give a command: create, list, test, deliveries or delete.", EXIT.usage);
  },
};
