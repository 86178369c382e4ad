import { answers, spawnServer, type SpawnedServer } from "./spawned-server.js";

/** A real Redis server on loopback, in a temporary directory, for tests; `start` brings it back empty. */
export interface RedisServer extends SpawnedServer {
  /** `redis://127.0.0.1:<port>` */
  readonly url: string;
}

/** Starts Debian's `redis-server` (apt-get install -y redis-server) on a free loopback port, with nothing saved to disk. */
export async function startRedis(): Promise<RedisServer> {
  const server = await spawnServer(
    "redis-server",
    (port, dir) => ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir],
    (port) => answers(port, "+PONG", "PING\r\n"),
  );
  return Object.assign(server, { url: `redis://127.0.0.1:${server.port}` });
}
