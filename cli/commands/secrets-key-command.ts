import type { CommandModule } from "yargs";
import { keyValues, print } from "../output.js";
import { loadRelayPart } from "../relay-part.js";

interface RotateArgs {
  dataDir?: string;
  database?: string;
  secretsKeyFile?: string;
  newKeyFile?: string;
  json?: boolean;
}

const rotate: CommandModule<object, RotateArgs> = {
  command: "rotate",
  describe: "Seal the database's secrets with a new secrets key (on SQLite, with the relay stopped)",
  builder: (y) =>
    y
      .option("data-dir", { type: "string", describe: "The relay's data directory [default: ./.makina]" })
      .option("database", { type: "string", describe: "The relays' PostgreSQL URL (env MAKINA_DATABASE_URL) [default: SQLite in the data directory]" })
      .option("secrets-key-file", { type: "string", describe: "The key in use, as the relays are given it (or MAKINA_SECRETS_KEY; env MAKINA_SECRETS_KEY_FILE) [default: the data directory's secrets.key]" })
      .option("new-key-file", { type: "string", describe: "The new key: read when the file exists, made into it otherwise [default: a new key replacing the data directory's, the old one moved beside it]" })
      .option("json", { type: "boolean", describe: "Print one JSON document" }),
  handler: async (argv) => {
    const { resolveRelayConfig, rotateSecretsKey } = await loadRelayPart(() => import("../../relay/index.js"));
    const config = resolveRelayConfig({ flags: { dataDir: argv.dataDir, database: argv.database, secretsKeyFile: argv.secretsKeyFile }, env: process.env });
    const done = await rotateSecretsKey(config, argv.newKeyFile ?? null);
    const restart = config.database
      ? `Give every relay on this database the new key (--secrets-key-file ${done.keyFile}, or MAKINA_SECRETS_KEY) before it starts again; relays running keep serving.`
      : "Start the relay again: it reads the new key from its data directory.";
    print({ json: argv.json ?? false }, { from: done.from, to: done.to, key_file: done.keyFile, retired_file: done.retiredFile, resealed: done.resealed }, () =>
      [
        keyValues([
          ["sealed with", `${done.to} (was ${done.from})`],
          ["new key", done.keyFile],
          ["old key", done.retiredFile ?? "as given: delete it once no backup sealed with it is kept"],
          ["sealed again", done.resealed.join(", ") || "no secret yet"],
        ]),
        restart,
      ].join("\n"),
    );
  },
};

export const secretsKeyCommand: CommandModule = {
  command: "secrets-key <command>",
  describe: "The key the relay's secrets are sealed with in its database",
  builder: (y) => y.command(rotate).demandCommand(1),
  handler: () => undefined,
};
