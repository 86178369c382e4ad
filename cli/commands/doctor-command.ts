import { existsSync } from "node:fs";
import { connect } from "node:net";
import { homedir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import type { CommandModule } from "yargs";
import type { AgentStatus } from "../../agent/control/index.js";
import { doctorChecks, type OfflineFacts } from "../../agent/doctor/index.js";
import { candidateSockets, fetchAgentStatus } from "../agent-client.js";
import { CliError, EXIT } from "../cli-error.js";
import { agentConfigPath, configuredSocket, localOptions, readAgentConfigFile, type LocalArgs } from "./local-agent.js";

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
  const configFile = agentConfigPath(argv) ?? [
      "/opt/makina/etc/agent.json",
      join(process.env.XDG_DATA_HOME ?? join(homedir(), ".local", "share"), "makina", "etc", "agent.json"),
      "/etc/makina/agent.json",
      join(process.env.XDG_CONFIG_HOME ?? join(homedir(), ".config"), "makina", "agent.json"),
    ].find(existsSync);
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

/** The agent's status once it is linked or the relay refused it, or as it is at `deadline`. */
async function statusWhenLinked(sockets: string[], deadline: number): Promise<AgentStatus | null> {
  for (;;) {
    const status = await fetchAgentStatus(sockets);
    if ((status && (status.link.state === "online" || status.link.credentialsRejected)) || Date.now() >= deadline) return status;
    await sleep(250);
  }
}

export const doctorCommand: CommandModule = {
  command: "doctor",
  describe: "Check the local agent: daemon, config, relay, token, runtimes, disk, GPU",
  builder: (y) =>
    localOptions(y).option("wait", {
      type: "number",
      default: 0,
      describe: "Wait up to this many seconds for the agent to answer and link to the relay (as the install script does)",
    }),
  handler: async (raw) => {
    const argv = raw as unknown as LocalArgs & { wait: number };
    if (!Number.isFinite(argv.wait) || argv.wait < 0 || argv.wait > 600) throw new CliError("--wait is a number of seconds from 0 to 600.", EXIT.usage);
    const sockets = candidateSockets(argv, process.env, configuredSocket(agentConfigPath(argv)));
    const status = await statusWhenLinked(sockets, Date.now() + argv.wait * 1000);
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
