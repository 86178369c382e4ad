import { randomUUID } from "node:crypto";
import type { Server } from "node:http";
import type { Duplex } from "node:stream";
import { MakinaError } from "../../proto/index.js";

/**
 * Answers requests that Node's HTTP parser rejects before Express sees them
 * (malformed request lines, oversized headers) in the same error envelope as
 * everything else, instead of Node's bare status line.
 */
export function answerClientErrors(server: Server): void {
  server.on("clientError", (err: NodeJS.ErrnoException, socket: Duplex) => {
    if (!socket.writable || (err.code === "ECONNRESET" && socket.destroyed)) {
      socket.destroy();
      return;
    }
    const e =
      err.code === "HPE_HEADER_OVERFLOW"
        ? new MakinaError("headers_too_large", "The request headers are too large.")
        : err.code === "ERR_HTTP_REQUEST_TIMEOUT"
          ? new MakinaError("request_timeout", "The request was not sent in time: the connection is closed.")
          : new MakinaError("bad_request", "The HTTP request is malformed.");
    const body = JSON.stringify(e.toBody());
    const reason = { 408: "Request Timeout", 431: "Request Header Fields Too Large" }[e.mapping.http as 408 | 431] ?? "Bad Request";
    socket.end(
      `HTTP/1.1 ${e.mapping.http} ${reason}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nx-request-id: req_${randomUUID().replaceAll("-", "")}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
}
