import { chmod, mkdir, rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import { connect } from "node:net";
import { dirname } from "node:path";
import type { Logger } from "../../proto/index.js";
import type { AgentStatus } from "./agent-status.js";

/** The running control socket. */
export interface ControlServer {
  readonly socketPath: string;
  close(): Promise<void>;
}

function socketAnswers(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(path);
    s.once("connect", () => {
      s.destroy();
      resolve(true);
    });
    s.once("error", () => resolve(false));
  });
}

/**
 * Serves the agent's status on a Unix socket only its owner can use (the
 * socket is 0600 inside a 0700 directory). `GET /v1/status` answers JSON.
 * Refuses to start when another agent already answers on the socket.
 */
export async function startControlServer(socketPath: string, status: () => Promise<AgentStatus>, log: Logger): Promise<ControlServer> {
  await mkdir(dirname(socketPath), { recursive: true, mode: 0o700 });
  if (await socketAnswers(socketPath)) throw new Error(`Another agent is already running (its control socket ${socketPath} answers).`);
  await rm(socketPath, { force: true });
  const server: Server = createServer((req, res) => {
    if (req.method !== "GET" || req.url !== "/v1/status") {
      res.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ error: { message: `Unknown request URL: ${req.method} ${req.url}`, type: "invalid_request_error", param: null, code: "unknown_url" } }));
      return;
    }
    status().then(
      (s) => res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(s)),
      (err: unknown) => {
        log.error("status failed", { err });
        res.writeHead(500, { "content-type": "application/json" }).end(JSON.stringify({ error: { message: "The agent could not build its status.", type: "server_error", param: null, code: "internal_error" } }));
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(socketPath, () => resolve());
  });
  await chmod(socketPath, 0o600);
  log.info("control socket listening", { socketPath });
  return {
    socketPath,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }).then(() => rm(socketPath, { force: true })),
  };
}
