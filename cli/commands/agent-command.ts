import type { CommandModule } from "yargs";
import { runUntilSignal } from "../run-until-signal.js";
import { agentConfigPath, readAgentConfigFile } from "./local-agent.js";

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
  logFormat?: string;
}

export const agentCommand: CommandModule<object, AgentArgs> = {
  command: "agent",
  describe: "Run the agent daemon in the foreground",
  builder: (y) =>
    y
      .option("config", { type: "string", describe: "Agent config file (JSON) (or MAKINA_AGENT_CONFIG)" })
      .option("server", { type: "string", describe: "Relay address host:port (repeat it for several relays; a name with several addresses is a relay per address)" })
      .option("machine-id", { type: "string", describe: "This machine's ID" })
      .option("token", { type: "string", describe: "This machine's token (shows in ps: prefer --token-file or the config file)" })
      .option("token-file", { type: "string", describe: "A file holding this machine's token" })
      .option("ca-sha256", { type: "string", describe: "Trust only the relay's own CA with this SHA-256 fingerprint (from the install command)" })
      .option("ca-file", { type: "string", describe: "Trust this CA for the link's TLS" })
      .option("tls", { type: "boolean", describe: "TLS on the link, trusting the system's CAs" })
      .option("insecure", { type: "boolean", describe: "Allow a plaintext link to an address that is not loopback" })
      .option("data-dir", { type: "string", describe: "Model cache directory [default: ~/.makina/agent]" })
      .option("threads", { type: "number", describe: "Inference threads [default: cores - 1]" })
      .option("max-loaded", { type: "number", describe: "Runtimes loaded at once on this machine, always stacks' included; on-demand ones are unloaded (least recently used first) to keep within it; 0: no limit (env MAKINA_AGENT_MAX_LOADED) [default: 0]" })
      .option("memory-budget", { type: "string", describe: "Memory the loaded runtimes may use together, always stacks' included: a share of the GPUs' memory (else of RAM, a Mac's unified memory), or a size such as 12GiB; on-demand ones are unloaded (least recently used first) to keep within it (env MAKINA_AGENT_MEMORY_BUDGET) [default: 90%]" })
      .option("log-format", { type: "string", choices: ["auto", "text", "json"], describe: "Log lines: readable (text) or JSON; auto: readable in a terminal, JSON otherwise (env MAKINA_LOG_FORMAT) [default: auto]" }),
  handler: async (argv) => {
    const { resolveAgentConfig, startAgent } = await import("../../agent/index.js");
    const configPath = agentConfigPath(argv);
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
        maxLoaded: argv.maxLoaded,
        memoryBudget: argv.memoryBudget,
        logFormat: argv.logFormat,
      },
      env: process.env,
      file: configPath ? readAgentConfigFile(configPath) : undefined,
    });
    const agent = await startAgent(config);
    await runUntilSignal(() => agent.stop());
  },
};
