import type { CommandModule } from "yargs";
import type { Org } from "../../../relay/admin-contract/index.js";
import { adminCall } from "../../admin-client.js";
import { CliError, EXIT } from "../../cli-error.js";
import { keyValues, print, table } from "../../output.js";
import { adminOptions, budgetArg, budgetText, limitArg, target, type AdminArgs } from "./common.js";

const limitsText = (o: Org) =>
  o.default_key_rpm === null && o.default_key_tpm === null
    ? "none"
    : [o.default_key_rpm !== null && `${o.default_key_rpm} RPM`, o.default_key_tpm !== null && `${o.default_key_tpm} TPM`].filter(Boolean).join(", ");

export const orgCommand: CommandModule = {
  command: "org <command>",
  describe: "Manage organizations",
  builder: (y) =>
    y
      .command({
        command: "create <name>",
        describe: "Create an organization",
        builder: (b) => adminOptions(b.positional("name", { type: "string", demandOption: true })),
        handler: async (argv) => {
          const a = argv as unknown as AdminArgs & { name: string };
          const org = await adminCall(target(a), "POST /admin/v1/orgs", { body: { name: a.name } });
          print(a, { id: org.id, name: org.name, slug: org.slug }, () => keyValues([["id", org.id], ["name", org.name], ["slug", org.slug]]));
        },
      })
      .command({
        command: "list",
        describe: "List organizations",
        builder: (b) => adminOptions(b),
        handler: async (argv) => {
          const a = argv as unknown as AdminArgs;
          const { data } = await adminCall(target(a), "GET /admin/v1/orgs");
          print(a, data, () => table(["ID", "SLUG", "NAME", "DEFAULT KEY LIMITS", "BUDGET"], data.map((o) => [o.id, o.slug, o.name, limitsText(o), budgetText(o)])));
        },
      })
      .command({
        command: "key-limits <org>",
        describe: "Set the rate limits of the organization's keys that set none of their own",
        builder: (b) =>
          adminOptions(
            b
              .positional("org", { type: "string", demandOption: true })
              .option("rpm", { type: "string", describe: "Requests per minute, or none" })
              .option("tpm", { type: "string", describe: "Tokens per minute, or none" }),
          ),
        handler: async (argv) => {
          const a = argv as unknown as AdminArgs & { org: string; rpm?: string; tpm?: string };
          const rpm = limitArg("rpm", a.rpm);
          const tpm = limitArg("tpm", a.tpm);
          if (rpm === undefined && tpm === undefined) throw new CliError("Give --rpm, --tpm or both (a number, or none).", EXIT.usage);
          const org = await adminCall(target(a), "PATCH /admin/v1/orgs/:org", { params: { org: a.org }, body: { default_key_rpm: rpm, default_key_tpm: tpm } });
          print(a, org, () => keyValues([["org", org.slug], ["default key limits", limitsText(org)]]));
        },
      })
      .command({
        command: "budget <org> <budget>",
        describe: "Set the token budget all the organization's keys share: TOKENS/PERIOD (50M/month, 2M/week, 100k/day; UTC), or none",
        builder: (b) => adminOptions(b.positional("org", { type: "string", demandOption: true }).positional("budget", { type: "string", demandOption: true })),
        handler: async (argv) => {
          const a = argv as unknown as AdminArgs & { org: string; budget: string };
          const org = await adminCall(target(a), "PATCH /admin/v1/orgs/:org", { params: { org: a.org }, body: { budget: budgetArg(a.budget) } });
          print(a, org, () => keyValues([["org", org.slug], ["budget", budgetText(org)]]));
        },
      })
      .demandCommand(1)
      .strict(),
  handler: () => {},
};
