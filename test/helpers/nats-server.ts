import { answers, spawnServer, type SpawnedServer } from "./spawned-server.js";

/** A real NATS server on loopback, for tests. */
export interface NatsServer extends SpawnedServer {
  /** `nats://127.0.0.1:<port>` */
  readonly url: string;
}

/** Starts Debian's `nats-server` (apt-get install -y nats-server) on a free loopback port. */
export async function startNats(): Promise<NatsServer> {
  const server = await spawnServer("nats-server", (port) => ["-a", "127.0.0.1", "-p", String(port)], (port) => answers(port, "INFO"));
  return Object.assign(server, { url: `nats://127.0.0.1:${server.port}` });
}
