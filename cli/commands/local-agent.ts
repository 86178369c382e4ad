import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import type { Argv } from "yargs";
import type { AgentStatus } from "../../agent/control/index.js";
import { candidateSockets, fetchAgentStatus } from "../agent-client.js";
import { CliError, EXIT } from "../cli-error.js";

/** Options of the commands that talk to the local agent. */
export interface LocalArgs {
  json: boolean;
  socket?: string;
  config?: string;
}

export function localOptions<T>(y: Argv<T>): Argv<T & LocalArgs> {
  return y
    .option("json", { type: "boolean", default: false, describe: "Print exactly one JSON document" })
    .option("socket", { type: "string", describe: "The agent's control socket (or MAKINA_AGENT_SOCKET)" })
    .option("config", { type: "string", describe: "The agent's config file, to find its socket and check it (or MAKINA_AGENT_CONFIG)" }) as Argv<T & LocalArgs>;
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

/** The agent config file to read: `--config`, else `MAKINA_AGENT_CONFIG` (which an installed `makina` sets). */
export function agentConfigPath(argv: { config?: string }, env: NodeJS.ProcessEnv = process.env): string | undefined {
  return argv.config ?? (env.MAKINA_AGENT_CONFIG || undefined);
}

/** The control socket an agent config file names: its `control_socket`, or `agent.sock` in its `data_dir`. */
export function configuredSocket(configPath: string | undefined): string | undefined {
  if (!configPath) return undefined;
  const file = readAgentConfigFile(configPath);
  if (typeof file.controlSocket === "string") return resolve(file.controlSocket);
  return typeof file.dataDir === "string" ? join(resolve(file.dataDir), "agent.sock") : undefined;
}

/** The running agent's status; a clear failure when none answers. */
export async function requireStatus(argv: LocalArgs): Promise<AgentStatus> {
  const sockets = candidateSockets(argv, process.env, configuredSocket(agentConfigPath(argv)));
  const status = await fetchAgentStatus(sockets);
  if (!status) throw new CliError(`The agent is not running (no answer on ${sockets.join(" or ")}). Run \`makina doctor\` for details.`);
  return status;
}
