import type { CommandModule } from "yargs";
import { adminRequest } from "../../admin-client.js";
import { keyValues, print, table } from "../../output.js";
import { adminOptions, target, type AdminArgs } from "./common.js";

interface Org {
  id: string;
  name: string;
  slug: string;
}

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
          const org = await adminRequest<Org>(target(a), "POST", "/orgs", { name: a.name });
          print(a, { id: org.id, name: org.name, slug: org.slug }, () => keyValues([["id", org.id], ["name", org.name], ["slug", org.slug]]));
        },
      })
      .command({
        command: "list",
        describe: "List organizations",
        builder: (b) => adminOptions(b),
        handler: async (argv) => {
          const a = argv as unknown as AdminArgs;
          const { data } = await adminRequest<{ data: Org[] }>(target(a), "GET", "/orgs");
          print(a, data, () => table(["ID", "SLUG", "NAME"], data.map((o) => [o.id, o.slug, o.name])));
        },
      })
      .demandCommand(1)
      .strict(),
  handler: () => {},
};
