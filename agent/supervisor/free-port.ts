import { createServer } from "node:net";

/** A TCP port free on 127.0.0.1 right now (for a child server's --port). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/** A readiness probe: true once GET `url` answers 2xx. */
export async function httpReady(url: string, signal: AbortSignal, headers: Record<string, string> = {}): Promise<boolean> {
  const res = await fetch(url, { headers, signal: AbortSignal.any([signal, AbortSignal.timeout(2000)]) });
  await res.body?.cancel();
  return res.ok;
}
