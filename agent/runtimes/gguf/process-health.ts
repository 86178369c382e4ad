import { MakinaError } from "../../../proto/index.js";
import { ProcessConnection } from "./process-connection.js";

/** A readiness probe and context-size query: the process's answer to a health frame. */
export async function processHealth(path: string, signal?: AbortSignal): Promise<{ contextSize: number; pausedRequests: number; memoryBytes: number }> {
  const deadline = AbortSignal.any([...(signal ? [signal] : []), AbortSignal.timeout(2000)]);
  const connection = await ProcessConnection.open(path, deadline);
  const onAbort = () => connection.destroy();
  deadline.addEventListener("abort", onAbort, { once: true });
  try {
    connection.send({ type: "health" });
    for (let frame = await connection.next(); frame; frame = await connection.next()) {
      if (frame.type === "health") return { contextSize: frame.contextSize, pausedRequests: frame.pausedRequests, memoryBytes: frame.memoryBytes };
    }
    if (deadline.aborted) throw MakinaError.from(deadline.reason);
    throw new MakinaError("runtime_unavailable", "The GGUF model process did not answer its health check.");
  } finally {
    deadline.removeEventListener("abort", onAbort);
    connection.destroy();
  }
}
