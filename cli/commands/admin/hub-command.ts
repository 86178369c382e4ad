import type { CommandModule } from "yargs";
import type { HubFile } from "../../../relay/admin-contract/index.js";
import { adminCall } from "../../admin-client.js";
import { CliError, EXIT } from "../../cli-error.js";
import { humanBytes, print, table } from "../../output.js";
import { adminOptions, target, type AdminArgs } from "./common.js";

/** A file's verdict for the machine asked: fits, does not (the first failing check's words), or not known yet. */
function verdict(f: HubFile): string {
  const c = f.compatibility;
  if (!c) return "-";
  if (c.ok === true) return "fits";
  if (c.ok === null) return "not known yet";
  return `no: ${c.checks.find((k) => k.level === "fail")?.message ?? "refused"}`;
}

export const hubCommand: CommandModule = {
  command: "hub <command>",
  describe: "Search the model hub the relay is given (--hf-endpoint) for models to serve",
  builder: (y) =>
    y
      .command({
        command: "search <text>",
        describe: "Repositories whose name matches, most downloaded first, with the runtimes each suits",
        builder: (b) => adminOptions(b.positional("text", { type: "string", demandOption: true }).option("org", { type: "string", describe: "The organization (the operator's token names one)" })),
        handler: async (argv) => {
          const a = argv as unknown as AdminArgs & { text: string; org?: string };
          const { data } = await adminCall(target(a), "GET /admin/v1/hub/search", { query: { org: a.org, q: a.text } });
          print(a, data, () =>
            data.length === 0
              ? `Nothing on the hub matches '${a.text}'.`
              : table(["REPOSITORY", "RUNTIMES", "DOWNLOADS", "LIKES", "LICENSE"], data.map((r) => [r.gated ? `${r.id} (gated)` : r.id, r.runtimes.join(", ") || "-", r.downloads.toLocaleString("en-US"), r.likes.toLocaleString("en-US"), r.license ?? "-"])),
          );
        },
      })
      .command({
        command: "files <repo>",
        describe: "A repository's GGUF files, each judged for a machine (--machine) and across the organization's machines",
        builder: (b) =>
          adminOptions(
            b
              .positional("repo", { type: "string", demandOption: true, describe: "owner/name" })
              .option("machine", { type: "string", describe: "The machine to judge each file for" })
              .option("org", { type: "string", describe: "The organization (the operator's token names one)" }),
          ),
        handler: async (argv) => {
          const a = argv as unknown as AdminArgs & { repo: string; machine?: string; org?: string };
          const [owner, name, ...rest] = a.repo.split("/");
          if (!owner || !name || rest.length) throw new CliError(`Give the repository as owner/name, not '${a.repo}'.`, EXIT.usage);
          const r = await adminCall(target(a), "GET /admin/v1/hub/repos/:owner/:name", { params: { owner, name }, query: { org: a.org, machine: a.machine } });
          print(a, r, () =>
            r.files.length === 0
              ? `${r.repo.id} has no GGUF file.`
              : table(
                  ["MODEL", "QUANT", "SIZE", ...(r.machine ? ["ON THE MACHINE"] : []), "FITS ON"],
                  r.files.map((f) => [f.model, f.quantization ?? "-", `${f.size_bytes === null ? "-" : humanBytes(f.size_bytes)}${f.parts > 1 ? ` (${f.parts} parts)` : ""}`, ...(r.machine ? [verdict(f)] : []), `${f.fits.machines} of ${f.fits.of} machines`]),
                ),
          );
        },
      })
      .demandCommand(1)
      .strict(),
  handler: () => {
    throw new CliError("Give a command: search or files.", EXIT.usage);
  },
};
