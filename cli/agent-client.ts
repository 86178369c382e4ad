import { existsSync } from "node:fs";
import { request } from "node:http";
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import type { AgentStatus } from "../agent/control/index.js";

/**
 * Where the local agent's control socket may be: `--socket`, `MAKINA_AGENT_SOCKET`, the one the agent's config file
 * names (its `control_socket`, or `agent.sock` in its `data_dir`), the default data dir's, `makina up`'s default.
 */
export function candidateSockets(flags: { socket?: string }, env: NodeJS.ProcessEnv, configSocket?: string): string[] {
  if (flags.socket) return [resolve(flags.socket)];
  if (env.MAKINA_AGENT_SOCKET) return [resolve(env.MAKINA_AGENT_SOCKET)];
  const paths = [configSocket, join(homedir(), ".makina", "agent", "agent.sock"), resolve(".makina", "agent", "agent.sock")];
  return [...new Set(paths.filter((p): p is string => !!p))];
}

function get(socketPath: string): Promise<AgentStatus> {
  return new Promise((resolvePromise, reject) => {
    const req = request({ socketPath, path: "/v1/status", method: "GET", timeout: 5000 }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (d: string) => (body += d));
      res.on("end", () => {
        try {
          if (res.statusCode !== 200) throw new Error(`the agent answered ${res.statusCode}`);
          resolvePromise(JSON.parse(body) as AgentStatus);
        } catch (err) {
          reject(err as Error);
        }
      });
    });
    req.on("timeout", () => req.destroy(new Error("the agent did not answer in 5 s")));
    req.on("error", reject);
    req.end();
  });
}

/** The status of the first agent that answers, or null when none does. */
export async function fetchAgentStatus(sockets: string[]): Promise<AgentStatus | null> {
  for (const s of sockets) {
    if (!existsSync(s)) continue;
    try {
      return await get(s);
    } catch {
      // A stale socket file: try the next place.
    }
  }
  return null;
}
