import { createServer } from "node:net";

/** A TCP port free on loopback now, for a server a test starts as a separate program (PostgreSQL, Redis). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
