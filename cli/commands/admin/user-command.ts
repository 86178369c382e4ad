import { randomBytes } from "node:crypto";
import type { CommandModule } from "yargs";
import { adminCall } from "../../admin-client.js";
import { keyValues, print, table } from "../../output.js";
import { adminOptions, target, when, type AdminArgs } from "./common.js";

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
          let password = randomBytes(15).toString("base64url");
          if (a.passwordStdin) {
            let input = "";
            for await (const chunk of process.stdin) input += String(chunk);
            password = input.replace(/\r?\n$/, "");
          }
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
          const { data } = await adminCall(target(a), "GET /admin/v1/users", { query: { org: a.org } });
          print(a, data, () => table(["ID", "LOGIN", "ROLE", "CREATED"], data.map((u) => [u.id, u.login, u.role, when(u.created_at)])));
        },
      })
      .demandCommand(1)
      .strict(),
  handler: () => {},
};
