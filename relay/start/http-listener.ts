import type { AddressInfo } from "node:net";
import { createServer, type RequestListener, type Server } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { answerClientErrors } from "../http/client-error.js";

/** Limits every listener of the relay holds its clients to. */
export interface ListenerLimits {
  /** The headers must arrive within this long, or the connection gets 408. */
  headerTimeoutMs: number;
  /** The whole request (body included) within this long. */
  bodyTimeoutMs: number;
  /** Connections beyond this many are refused. */
  maxConnections: number;
}

/** One HTTP(S) listener of the relay. */
export interface HttpListener {
  readonly server: Server;
  readonly port: number;
  /** e.g. `https://127.0.0.1:8080` */
  readonly url: string;
  /** Takes no new connections; those open go on (a drain). */
  stopAccepting(): void;
  /** Closes the connections that are idle (their answer sent), so keep-alive clients move on. */
  closeIdle(): void;
  /** Stops accepting, then waits for the connections to end, closing them all after `forceAfterMs`. */
  close(forceAfterMs: number): Promise<void>;
}

/** Listens on `host:port` with `handler`, over TLS when given a certificate; rejects as `listen` does (a port taken). */
export async function listenHttp(handler: RequestListener, host: string, port: number, limits: ListenerLimits, tls?: { cert: Buffer; key: Buffer }): Promise<HttpListener> {
  const timeouts = { headersTimeout: limits.headerTimeoutMs, requestTimeout: limits.bodyTimeoutMs, connectionsCheckingInterval: Math.min(1000, limits.headerTimeoutMs) };
  const server: Server = tls ? createHttpsServer({ ...tls, ...timeouts }, handler) : createServer(timeouts, handler);
  server.keepAliveTimeout = 65_000;
  server.maxConnections = limits.maxConnections;
  answerClientErrors(server);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const bound = (server.address() as AddressInfo).port;
  let closed: Promise<void> | undefined;
  const stopAccepting = () => {
    closed ??= new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return {
    server,
    port: bound,
    url: `${tls ? "https" : "http"}://${host.includes(":") ? `[${host}]` : host}:${bound}`,
    stopAccepting,
    closeIdle: () => server.closeIdleConnections(),
    async close(forceAfterMs) {
      stopAccepting();
      server.closeIdleConnections();
      const force = setTimeout(() => server.closeAllConnections(), forceAfterMs);
      try {
        await closed;
      } finally {
        clearTimeout(force);
      }
    },
  };
}
