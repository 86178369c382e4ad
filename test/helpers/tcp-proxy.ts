import { createConnection, createServer, type Socket } from "node:net";

/** A TCP proxy on loopback a test can cut: what stands for a network between one relay and its database failing. */
export interface TcpProxy {
  readonly port: number;
  /** Ends every connection through it and refuses new ones until {@link TcpProxy.restore}. */
  cut(): void;
  restore(): void;
  close(): Promise<void>;
}

/** Starts a proxy to `host:port` on a free loopback port. */
export async function startTcpProxy(host: string, port: number): Promise<TcpProxy> {
  const open = new Set<Socket>();
  let cut = false;
  const server = createServer((client) => {
    if (cut) return void client.destroy();
    const upstream = createConnection({ host, port });
    for (const s of [client, upstream]) {
      open.add(s);
      s.on("error", () => undefined);
      s.on("close", () => {
        open.delete(s);
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as { port: number }).port,
    cut() {
      cut = true;
      for (const s of open) s.destroy();
    },
    restore() {
      cut = false;
    },
    close() {
      for (const s of open) s.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
