import { readFileSync } from "node:fs";
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
      .command({
        command: "sso <command>",
        describe: "The organization's single sign-on (OpenID Connect)",
        builder: (s) =>
          s
            .command({
              command: "set <org>",
              describe: "Set its identity provider; the issuer is read now. Prints the redirect URI to register there",
              builder: (b) =>
                adminOptions(
                  b
                    .positional("org", { type: "string", demandOption: true })
                    .option("issuer", { type: "string", demandOption: true, describe: "The provider's issuer URL (https://login.example.com/realms/acme)" })
                    .option("client-id", { type: "string", demandOption: true })
                    .option("client-secret-file", { type: "string", describe: "A file holding the client secret (needed the first time; kept sealed, never shown)" })
                    .option("label", { type: "string", demandOption: true, describe: 'What the sign-in button says after "Sign in with"' })
                    .option("role-claim", { type: "string", describe: "The ID token claim listing the person's groups (e.g. groups)" })
                    .option("admin-group", { type: "string", array: true, describe: "A group whose people are admins (repeatable)" })
                    .option("passwords", { type: "string", choices: ["everyone", "break-glass"], default: "everyone", describe: "Who may still sign in with a password" })
                    .option("break-glass-login", { type: "string", describe: "With --passwords break-glass: the one admin who still may" }),
                ),
              handler: async (argv) => {
                const a = argv as unknown as AdminArgs & { org: string; issuer: string; clientId: string; clientSecretFile?: string; label: string; roleClaim?: string; adminGroup?: string[]; passwords: string; breakGlassLogin?: string };
                const secret = a.clientSecretFile === undefined ? undefined : readFileSync(a.clientSecretFile, "utf8").trim();
                const sso = await adminCall(target(a), "PUT /admin/v1/orgs/:org/sso", {
                  params: { org: a.org },
                  body: { issuer: a.issuer, client_id: a.clientId, client_secret: secret, label: a.label, role_claim: a.roleClaim ?? null, admin_groups: a.adminGroup ?? [], passwords: a.passwords === "break-glass" ? "break_glass" : "everyone", break_glass_login: a.breakGlassLogin ?? null },
                });
                print(a, sso, () => keyValues([["issuer", sso.issuer], ["client id", sso.client_id], ["button", `Sign in with ${sso.label}`], ["redirect URI", `${sso.redirect_uri}  (register it at the provider)`], ["passwords", sso.passwords === "everyone" ? "everyone" : `only ${sso.break_glass_login}`]]));
              },
            })
            .command({
              command: "show <org>",
              describe: "Show its single sign-on (never the client secret)",
              builder: (b) => adminOptions(b.positional("org", { type: "string", demandOption: true })),
              handler: async (argv) => {
                const a = argv as unknown as AdminArgs & { org: string };
                const sso = await adminCall(target(a), "GET /admin/v1/orgs/:org/sso", { params: { org: a.org } });
                print(a, sso, () => (sso ? keyValues([["issuer", sso.issuer], ["client id", sso.client_id], ["button", `Sign in with ${sso.label}`], ["redirect URI", sso.redirect_uri], ["groups claim", sso.role_claim ?? "-"], ["admin groups", sso.admin_groups.join(", ") || "-"], ["passwords", sso.passwords === "everyone" ? "everyone" : `only ${sso.break_glass_login}`]]) : "No single sign-on."));
              },
            })
            .command({
              command: "remove <org>",
              describe: "Remove its single sign-on: its people sign in with passwords again",
              builder: (b) => adminOptions(b.positional("org", { type: "string", demandOption: true })),
              handler: async (argv) => {
                const a = argv as unknown as AdminArgs & { org: string };
                const r = await adminCall(target(a), "DELETE /admin/v1/orgs/:org/sso", { params: { org: a.org } });
                print(a, r, () => "Single sign-on removed.");
              },
            })
            .demandCommand(1)
            .strict(),
        handler: () => {},
      })
      .demandCommand(1)
      .strict(),
  handler: () => {},
};
