import { randomBytes } from "node:crypto";
import type { Argv, CommandModule } from "yargs";
import type { User } from "../../../relay/admin-contract/index.js";
import { adminCall, type AdminTarget } from "../../admin-client.js";
import { CliError, EXIT } from "../../cli-error.js";
import { keyValues, print, table } from "../../output.js";
import { allPages, adminOptions, target, when, type AdminArgs } from "./common.js";

type UserArgs = AdminArgs & { user: string; org?: string };

/** A password: read from standard input (its last line break dropped), or generated. */
async function passwordFrom(fromStdin: boolean): Promise<string> {
  if (!fromStdin) return randomBytes(15).toString("base64url");
  let input = "";
  for await (const chunk of process.stdin) input += String(chunk);
  return input.replace(/\r?\n$/, "");
}

/** The user named by its id (`user_…`), or by its login in `--org`. */
async function userId(t: AdminTarget, a: UserArgs): Promise<string> {
  if (a.user.startsWith("user_")) return a.user;
  if (!a.org) throw new CliError(`Name the user by its id (user_…), or give --org to find the login '${a.user}'.`, EXIT.usage);
  const data = await allPages((page, perPage) => adminCall(t, "GET /admin/v1/users", { query: { org: a.org, page, per_page: perPage } }));
  const found = data.find((u) => u.login === a.user);
  if (!found) throw new CliError(`No user '${a.user}' in ${a.org}.`);
  return found.id;
}

/** `<user>` and `--org`, which every command acting on one user takes. */
const oneUser = <T>(b: Argv<T>) =>
  adminOptions(
    b
      .positional("user", { type: "string", demandOption: true, describe: "The user's id (user_…), or its login with --org" })
      .option("org", { type: "string", describe: "The organization, to name the user by its login" }),
  );

const describeUser = (u: User) => keyValues([["id", u.id], ["login", u.login], ["role", u.role], ["state", u.disabled_at ? `disabled since ${when(u.disabled_at)}` : "enabled"]]);

/** `disable` and `enable`: one PATCH each. */
const setDisabled = (disabled: boolean): CommandModule => ({
  command: `${disabled ? "disable" : "enable"} <user>`,
  describe: disabled
    ? "Disable a user: its sessions and live pages end at once, it cannot sign in, and the keys it made answer 401 until it is enabled"
    : "Enable a disabled user: it can sign in again and its keys work again",
  builder: oneUser,
  handler: async (argv) => {
    const a = argv as unknown as UserArgs;
    const t = target(a);
    const u = await adminCall(t, "PATCH /admin/v1/users/:id", { params: { id: await userId(t, a) }, body: { disabled } });
    print(a, u, () => describeUser(u));
  },
});

export const userCommand: CommandModule = {
  command: "user <command>",
  describe: "Manage the people who sign in to the web application",
  builder: (y) =>
    y
      .command({
        command: "create",
        describe: "Add a user to an organization; prints a generated password once unless --password-stdin",
        builder: (b) =>
          adminOptions(
            b
              .option("org", { type: "string", demandOption: true })
              .option("login", { type: "string", demandOption: true, describe: "Login or email address" })
              .option("role", { choices: ["admin", "member"] as const, default: "member" as const })
              .option("password-stdin", { type: "boolean", default: false, describe: "Read the password from standard input (at least 10 characters)" }),
          ),
        handler: async (argv) => {
          const a = argv as unknown as AdminArgs & { org: string; login: string; role: "admin" | "member"; passwordStdin: boolean };
          const password = await passwordFrom(a.passwordStdin);
          const u = await adminCall(target(a), "POST /admin/v1/users", { body: { org: a.org, login: a.login, role: a.role, password } });
          print(a, a.passwordStdin ? u : { ...u, password }, () =>
            keyValues([["id", u.id], ["login", u.login], ["role", u.role], ...(a.passwordStdin ? [] : [["password", `${password}  (shown this once)`] as [string, string]])]),
          );
        },
      })
      .command({
        command: "list",
        describe: "List an organization's users",
        builder: (b) => adminOptions(b.option("org", { type: "string", demandOption: true })),
        handler: async (argv) => {
          const a = argv as unknown as AdminArgs & { org: string };
          const data = await allPages((page, perPage) => adminCall(target(a), "GET /admin/v1/users", { query: { org: a.org, page, per_page: perPage } }));
          print(a, data, () => table(["ID", "LOGIN", "ROLE", "STATE", "CREATED"], data.map((u) => [u.id, u.login, u.role, u.disabled_at ? "disabled" : "enabled", when(u.created_at)])));
        },
      })
      .command(setDisabled(true))
      .command(setDisabled(false))
      .command({
        command: "set-role <user> <role>",
        describe: "Make a user an admin or a member; its sessions end (it signs in again with the new role)",
        builder: (b) => oneUser(b.positional("role", { choices: ["admin", "member"] as const, demandOption: true })),
        handler: async (argv) => {
          const a = argv as unknown as UserArgs & { role: "admin" | "member" };
          const t = target(a);
          const u = await adminCall(t, "PATCH /admin/v1/users/:id", { params: { id: await userId(t, a) }, body: { role: a.role } });
          print(a, u, () => describeUser(u));
        },
      })
      .command({
        command: "reset-password <user>",
        describe: "Give a user a new password (printed once unless --password-stdin); its sessions end",
        builder: (b) => oneUser(b.option("password-stdin", { type: "boolean", default: false, describe: "Read the new password from standard input (at least 10 characters)" })),
        handler: async (argv) => {
          const a = argv as unknown as UserArgs & { passwordStdin: boolean };
          const t = target(a);
          const id = await userId(t, a);
          const password = await passwordFrom(a.passwordStdin);
          const u = await adminCall(t, "POST /admin/v1/users/:id/reset-password", { params: { id }, body: { password } });
          print(a, a.passwordStdin ? u : { ...u, password }, () =>
            [describeUser(u), ...(a.passwordStdin ? [] : [keyValues([["password", `${password}  (shown this once)`]])])].join("\n"),
          );
        },
      })
      .command({
        command: "delete <user>",
        describe: "Delete a user: its sessions end and the keys it made are revoked",
        builder: oneUser,
        handler: async (argv) => {
          const a = argv as unknown as UserArgs;
          const t = target(a);
          const gone = await adminCall(t, "DELETE /admin/v1/users/:id", { params: { id: await userId(t, a) } });
          print(a, gone, () => `Deleted ${gone.id}; ${gone.keys_revoked} key${gone.keys_revoked === 1 ? "" : "s"} revoked.`);
        },
      })
      .demandCommand(1)
      .strict(),
  handler: () => {},
};
