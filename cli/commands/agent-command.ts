import { readFileSync } from "node:fs";
import type { CommandModule } from "yargs";
import { CliError, EXIT } from "../cli-error.js";
import { runUntilSignal } from "../run-until-signal.js";

interface AgentArgs {
  config?: string;
  server?: string;
  machineId?: string;
  token?: string;
  tokenFile?: string;
  caSha256?: string;
  caFile?: string;
  tls?: boolean;
  insecure?: boolean;
  dataDir?: string;
  threads?: number;
}

/** Reads an agent config file (JSON; snake_case or camelCase keys). */
export function readAgentConfigFile(path: string): Record<string, unknown> {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, "utf8"));
  } catch (err) {
    throw new CliError(`Cannot read the agent config ${path}: ${(err as Error).message}`, EXIT.usage);
  }
  return Object.fromEntries(Object.entries(raw as Record<string, unknown>).map(([k, v]) => [k.replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase()), v]));
}

export const agentCommand: CommandModule<object, AgentArgs> = {
  command: "agent",
  describe: "Run the agent daemon in the foreground",
  builder: (y) =>
    y
      .option("config", { type: "string", describe: "Agent config file (JSON)" })
      .option("server", { type: "string", describe: "Relay address host:port" })
      .option("machine-id", { type: "string", describe: "This machine's ID" })
      .option("token", { type: "string", describe: "This machine's token (shows in ps: prefer --token-file or the config file)" })
      .option("token-file", { type: "string", describe: "A file holding this machine's token" })
      .option("ca-sha256", { type: "string", describe: "Trust only the relay's own CA with this SHA-256 fingerprint (from the install command)" })
      .option("ca-file", { type: "string", describe: "Trust this CA for the link's TLS" })
      .option("tls", { type: "boolean", describe: "TLS on the link, trusting the system's CAs" })
      .option("insecure", { type: "boolean", describe: "Allow a plaintext link to an address that is not loopback" })
      .option("data-dir", { type: "string", describe: "Model cache directory [default: ~/.makina/agent]" })
      .option("threads", { type: "number", describe: "Inference threads [default: cores - 1]" }),
  handler: async (argv) => {
    const { resolveAgentConfig, startAgent } = await import("../../agent/index.js");
    const config = resolveAgentConfig({
      flags: {
        server: argv.server,
        machineId: argv.machineId,
        token: argv.token,
        tokenFile: argv.tokenFile,
        caSha256: argv.caSha256,
        caFile: argv.caFile,
        tls: argv.tls,
        insecure: argv.insecure,
        dataDir: argv.dataDir,
        threads: argv.threads,
      },
      env: process.env,
      file: argv.config ? readAgentConfigFile(argv.config) : undefined,
    });
    const agent = await startAgent(config);
    await runUntilSignal(() => agent.stop());
  },
};
