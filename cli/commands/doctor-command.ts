import { existsSync } from "node:fs";
import { connect } from "node:net";
import { homedir } from "node:os";
import { join } from "node:path";
import type { CommandModule } from "yargs";
import { doctorChecks, type OfflineFacts } from "../../agent/doctor/doctor-checks.js";
import { candidateSockets, fetchAgentStatus } from "../agent-client.js";
import { CliError } from "../cli-error.js";
import { readAgentConfigFile } from "./agent-command.js";
import { localOptions, type LocalArgs } from "./local-agent.js";

function tcpReachable(address: string): Promise<boolean> {
  const i = address.lastIndexOf(":");
  return new Promise((resolve) => {
    const s = connect({ host: address.slice(0, i).replace(/^\[|\]$/g, ""), port: Number(address.slice(i + 1)), timeout: 3000 });
    const done = (ok: boolean) => {
      s.destroy();
      resolve(ok);
    };
    s.once("connect", () => done(true));
    s.once("timeout", () => done(false));
    s.once("error", () => done(false));
  });
}

/** What doctor can find out while the daemon is down: its config and whether the relay answers. */
async function offlineFacts(argv: LocalArgs, sockets: string[]): Promise<OfflineFacts> {
  const facts: OfflineFacts = { socketPaths: sockets };
  const configFile = argv.config ?? ["/etc/makina/agent.json", join(process.env.XDG_CONFIG_HOME ?? join(homedir(), ".config"), "makina", "agent.json")].find(existsSync);
  if (!configFile) return facts;
  facts.configFile = configFile;
  try {
    const { resolveAgentConfig } = await import("../../agent/index.js");
    const config = resolveAgentConfig({ file: readAgentConfigFile(configFile), env: process.env });
    facts.server = config.server;
    facts.relayReachable = await tcpReachable(config.server);
  } catch (err) {
    facts.configProblems = (err as { problems?: string[] }).problems ?? [(err as Error).message];
  }
  return facts;
}

export const doctorCommand: CommandModule = {
  command: "doctor",
  describe: "Check the local agent: daemon, config, relay, token, runtimes, disk, GPU",
  builder: (y) => localOptions(y),
  handler: async (raw) => {
    const argv = raw as unknown as LocalArgs;
    const sockets = candidateSockets(argv, process.env);
    const status = await fetchAgentStatus(sockets);
    const checks = doctorChecks(status, status ? { socketPaths: sockets } : await offlineFacts(argv, sockets));
    if (argv.json) process.stdout.write(JSON.stringify({ ok: !checks.some((c) => c.level === "fail"), checks }, null, 2) + "\n");
    else {
      const mark = { ok: "ok  ", warn: "warn", fail: "FAIL" } as const;
      for (const c of checks) process.stdout.write(`${mark[c.level]}  ${c.name}: ${c.detail}${c.hint && c.level !== "ok" ? `\n      hint: ${c.hint}` : ""}\n`);
    }
    const failed = checks.filter((c) => c.level === "fail").length;
    if (failed) throw new CliError(`${failed} check${failed === 1 ? "" : "s"} failed.`);
  },
};
