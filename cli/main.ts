#!/usr/bin/env node
import yargs from "yargs";
import { hideBin } from "yargs/helpers";
import { agentVersion } from "../agent/control/index.js";
import { CliError, EXIT, exitFor } from "./cli-error.js";
import { adminCommand } from "./commands/admin/admin-command.js";
import { agentCommand } from "./commands/agent-command.js";
import { doctorCommand } from "./commands/doctor-command.js";
import { infoCommand } from "./commands/info-command.js";
import { modelCommand } from "./commands/model-command.js";
import { runtimeCommand } from "./commands/runtime-command.js";
import { relayCommand } from "./commands/relay-command.js";
import { secretsKeyCommand } from "./commands/secrets-key-command.js";
import { upCommand } from "./commands/up-command.js";

/** Runs `makina` with `argv`; resolves to the exit status. */
export async function main(argv: string[]): Promise<number> {
  try {
    await yargs(argv)
      .scriptName("makina")
      .usage("$0 <command>\n\nSelf-hosted inference gateway: your machines, the OpenAI chat-completions API.")
      .command(upCommand)
      .command(relayCommand)
      .command(agentCommand)
      .command(doctorCommand)
      .command(infoCommand)
      .command(runtimeCommand)
      .command(modelCommand)
      .command(adminCommand)
      .command(secretsKeyCommand)
      .demandCommand(1, "Name a command; see --help.")
      .strict()
      .help()
      .version(agentVersion())
      .fail((message, err) => {
        throw err ?? new CliError(message, EXIT.usage);
      })
      .parseAsync();
    return EXIT.ok;
  } catch (err) {
    const { code, message } = exitFor(err);
    process.stderr.write(`makina: ${message}\n`);
    return code;
  }
}

// A promise that fails with nobody awaiting it is a bug, but not a reason to drop every request in flight: it is
// logged as an error (one JSON line, like the daemons' logs) and the process keeps serving.
process.on("unhandledRejection", (reason) => {
  const err = reason instanceof Error ? { name: reason.name, message: reason.message, stack: reason.stack } : { value: String(reason) };
  process.stderr.write(`${JSON.stringify({ time: new Date().toISOString(), level: "error", msg: "unhandled promise rejection", err })}\n`);
});

process.exitCode = await main(hideBin(process.argv));
