import type { Argv } from "yargs";
import type { AgentStatus } from "../../agent/control/agent-status.js";
import { candidateSockets, fetchAgentStatus } from "../agent-client.js";
import { CliError } from "../cli-error.js";

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
    .option("config", { type: "string", describe: "The agent's config file, to find its socket and check it" }) as Argv<T & LocalArgs>;
}

/** The running agent's status; a clear failure when none answers. */
export async function requireStatus(argv: LocalArgs, configDataDir?: string): Promise<AgentStatus> {
  const sockets = candidateSockets(argv, process.env, configDataDir);
  const status = await fetchAgentStatus(sockets);
  if (!status) throw new CliError(`The agent is not running (no answer on ${sockets.join(" or ")}). Run \`makina doctor\` for details.`);
  return status;
}
