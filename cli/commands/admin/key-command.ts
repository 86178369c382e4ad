import type { CommandModule } from "yargs";
import type { ApiKey } from "../../../relay/admin-contract/index.js";
import { SERVICE_TIERS, type ServiceTier } from "../../../proto/index.js";
import { adminCall } from "../../admin-client.js";
import { CliError, EXIT } from "../../cli-error.js";
import { keyValues, print, table } from "../../output.js";
import { allPages, adminOptions, budgetArg, budgetText, limitArg, target, when, type AdminArgs } from "./common.js";

const restrictions = (k: ApiKey) => [k.stack_ids ? `stacks ${k.stack_ids.join(",")}` : "", k.machine_ids ? `machines ${k.machine_ids.join(",")}` : ""].filter(Boolean).join("; ") || "none";
const limits = (k: ApiKey) => [k.rpm ? `${k.rpm} rpm` : "", k.tpm ? `${k.tpm} tpm` : ""].filter(Boolean).join(", ") || "none";
const expiry = (k: ApiKey) => (k.expires_at === null ? "never" : when(k.expires_at));

/** `--expires`: a date-time (ISO 8601, as the relay takes it) or `never`; undefined when not given. */
function expiresArg(v: string | undefined): string | null | undefined {
  if (v === undefined) return undefined;
  if (v === "never") return null;
  if (Number.isNaN(Date.parse(v))) throw new CliError("--expires is a date-time such as 2026-12-31 or 2026-12-31T18:00:00Z, or never.", EXIT.usage);
  return v;
}

/** `key regenerate`: a new secret, printed once; the old one works `--grace` seconds more. */
const regenerateCommand: CommandModule = {
  command: "regenerate <id>",
  describe: "Give a key a new secret, printed once; its old secret works --grace seconds more (0 to 86400, default 0)",
  builder: (b) => adminOptions(b.positional("id", { type: "string", demandOption: true }).option("grace", { type: "number", default: 0, describe: "Seconds the old secret keeps working (at most 86400, a day)" })),
  handler: async (argv) => {
    const a = argv as unknown as AdminArgs & { id: string; grace: number };
    const k = await adminCall(target(a), "POST /admin/v1/keys/:id/regenerate", { params: { id: a.id }, body: { grace_s: a.grace } });
    print(a, k, () => keyValues([["id", k.id], ["key", `${k.key}  (shown this once)`], ["old secret works until", when(k.old_secret_until)]]));
  },
};

/** `key block` and `key unblock`. */
const blockCommand = (block: boolean): CommandModule => ({
  command: `${block ? "block" : "unblock"} <id>`,
  describe: block ? "Block a key: refused from the next request on, until unblocked" : "Unblock a key: served again from the next request on",
  builder: (b) => adminOptions(b.positional("id", { type: "string", demandOption: true })),
  handler: async (argv) => {
    const a = argv as unknown as AdminArgs & { id: string };
    const k = await adminCall(target(a), block ? "POST /admin/v1/keys/:id/block" : "POST /admin/v1/keys/:id/unblock", { params: { id: a.id } });
    print(a, k, () => keyValues([["id", k.id], ["state", k.state]]));
  },
});

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
              .option("tpm", { type: "number", describe: "Tokens per minute" })
              .option("expires", { type: "string", describe: "When it stops working: a date-time (2026-12-31, 2026-12-31T18:00:00Z)" })
              .option("service-tier", { type: "string", choices: SERVICE_TIERS, describe: "The most its requests may ask: priority, default (the default) or flex" })
              .option("budget", { type: "string", describe: "Its token budget: TOKENS/PERIOD, such as 100k/day or 50M/month (admins)" }),
          ),
        handler: async (argv) => {
          const a = argv as unknown as AdminArgs & { org: string; name?: string; stack?: string[]; machine?: string[]; rpm?: number; tpm?: number; expires?: string; serviceTier?: ServiceTier; budget?: string };
          const k = await adminCall(target(a), "POST /admin/v1/keys", {
            body: { org: a.org, name: a.name, stacks: a.stack, machines: a.machine, rpm: a.rpm, tpm: a.tpm, expires_at: expiresArg(a.expires), service_tier: a.serviceTier, budget: budgetArg(a.budget) },
          });
          print(a, k, () =>
            keyValues([["id", k.id], ["key", `${k.key}  (shown this once)`], ["restrictions", restrictions(k)], ["limits", limits(k)], ["service tier", k.service_tier], ["budget", budgetText(k)], ["expires", expiry(k)]]),
          );
        },
      })
      .command({
        command: "update <id>",
        aliases: ["edit"],
        describe: "Change a key's name, restrictions, limits, service tier, budget or expiry; what is not given stays (also: edit)",
        builder: (b) =>
          adminOptions(
            b
              .positional("id", { type: "string", demandOption: true })
              .option("name", { type: "string", describe: "Its new name" })
              .option("stack", { type: "string", array: true, describe: "Restrict to this stack (repeatable; replaces the list)" })
              .option("any-stack", { type: "boolean", describe: "Lift the restriction to stacks" })
              .option("machine", { type: "string", array: true, describe: "Restrict to this machine (repeatable; replaces the list)" })
              .option("any-machine", { type: "boolean", describe: "Lift the restriction to machines" })
              .option("rpm", { type: "string", describe: "Requests per minute, or none (the organization's default)" })
              .option("tpm", { type: "string", describe: "Tokens per minute, or none (the organization's default)" })
              .option("expires", { type: "string", describe: "When it stops working (2026-12-31, 2026-12-31T18:00:00Z), or never" })
              .option("service-tier", { type: "string", choices: SERVICE_TIERS, describe: "The most its requests may ask: priority, default or flex" })
              .option("budget", { type: "string", describe: "Its token budget: TOKENS/PERIOD (100k/day, 50M/month), or none (admins)" })
              .conflicts("stack", "any-stack")
              .conflicts("machine", "any-machine"),
          ),
        handler: async (argv) => {
          const a = argv as unknown as AdminArgs & {
            id: string;
            name?: string;
            stack?: string[];
            anyStack?: boolean;
            machine?: string[];
            anyMachine?: boolean;
            rpm?: string;
            tpm?: string;
            expires?: string;
            serviceTier?: ServiceTier;
            budget?: string;
          };
          const body = {
            name: a.name,
            stacks: a.anyStack ? null : a.stack,
            machines: a.anyMachine ? null : a.machine,
            rpm: limitArg("rpm", a.rpm),
            tpm: limitArg("tpm", a.tpm),
            expires_at: expiresArg(a.expires),
            service_tier: a.serviceTier,
            budget: budgetArg(a.budget),
          };
          if (Object.values(body).every((v) => v === undefined)) throw new CliError("Nothing to change: give --name, --stack, --any-stack, --machine, --any-machine, --rpm, --tpm, --expires, --service-tier or --budget.", EXIT.usage);
          const k = await adminCall(target(a), "PATCH /admin/v1/keys/:id", { params: { id: a.id }, body });
          print(a, k, () => keyValues([["id", k.id], ["name", k.name ?? "-"], ["state", k.state], ["restrictions", restrictions(k)], ["limits", limits(k)], ["service tier", k.service_tier], ["budget", budgetText(k)], ["expires", expiry(k)]]));
        },
      })
      .command({
        command: "list",
        describe: "List keys (never their secrets)",
        builder: (b) => adminOptions(b.option("org", { type: "string", demandOption: true })),
        handler: async (argv) => {
          const a = argv as unknown as AdminArgs & { org: string };
          const data = await allPages((page, perPage) => adminCall(target(a), "GET /admin/v1/keys", { query: { org: a.org, page, per_page: perPage } }));
          print(a, data, () =>
            table(["ID", "NAME", "PREFIX", "STATE", "RESTRICTIONS", "LIMITS", "TIER", "BUDGET", "EXPIRES", "LAST USED"], data.map((k) => [k.id, k.name, `${k.prefix}…`, k.state, restrictions(k), limits(k), k.service_tier, budgetText(k), expiry(k), when(k.last_used_at)])),
          );
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
      .command(regenerateCommand)
      .command(blockCommand(true))
      .command(blockCommand(false))
      .demandCommand(1)
      .strict(),
  handler: () => {},
};
