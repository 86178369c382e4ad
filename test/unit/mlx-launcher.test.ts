import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MLX_KEY_ENV, MLX_LAUNCHER } from "../../agent/runtimes/adapters/mlx-launcher.js";
import { freePort } from "../../agent/supervisor/index.js";

// mlx-lm runs only on Apple silicon and PyPI is out of reach: the launcher runs here with the real Python and a
// stand-in `mlx_lm.server` module built the way mlx-lm's is (argparse in `main()`, a handler on Python's
// `http.server`), which reports what it was started with.
const STANDIN_MLX_SERVER = `
import argparse, json, os, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

class Handler(BaseHTTPRequestHandler):
    def answer(self):
        body = json.dumps({"argv": sys.argv, "key_in_environment": "${MLX_KEY_ENV}" in os.environ, "path": self.path}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    do_GET = answer
    do_POST = answer
    def log_message(self, *args):
        pass

def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model")
    parser.add_argument("--host")
    parser.add_argument("--port", type=int)
    args = parser.parse_args()
    server = ThreadingHTTPServer((args.host, args.port), Handler)
    print("listening", flush=True)
    server.serve_forever()
`;

describe("the MLX launcher: mlx_lm.server with a key of this start", () => {
  let dir: string;
  let server: ChildProcess;
  let base: string;
  const key = "k3y-of-this-start_0123456789";

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "makina-mlx-launcher-"));
    mkdirSync(join(dir, "mlx_lm"));
    writeFileSync(join(dir, "mlx_lm", "__init__.py"), "");
    writeFileSync(join(dir, "mlx_lm", "server.py"), STANDIN_MLX_SERVER);
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    // Where it is started from holds a module named as one the launcher imports: it must not be the one used.
    const cwd = join(dir, "cwd");
    mkdirSync(cwd);
    writeFileSync(join(cwd, "hmac.py"), "def compare_digest(a, b):\n    return True\n");
    server = spawn("python3", ["-c", MLX_LAUNCHER, "--model", "mlx-community/Qwen2.5-0.5B-Instruct-4bit", "--host", "127.0.0.1", "--port", String(port)], {
      cwd,
      env: { PATH: process.env.PATH, PYTHONPATH: dir, [MLX_KEY_ENV]: key },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    server.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
    await new Promise<void>((resolve, reject) => {
      server.stdout!.on("data", (d: Buffer) => d.toString().includes("listening") && resolve());
      server.once("exit", (code) => reject(new Error(`the launcher exited (${code}): ${stderr}`)));
    });
  });
  afterAll(() => {
    server?.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  });

  it("answers a request that shows the key, and starts mlx-lm's server with the arguments it was given", async () => {
    const res = await fetch(`${base}/v1/models`, { headers: { authorization: `Bearer ${key}` } });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      argv: ["mlx_lm.server", "--model", "mlx-community/Qwen2.5-0.5B-Instruct-4bit", "--host", "127.0.0.1", "--port", base.split(":")[2]],
      // Taken out of the environment before mlx-lm started: nothing it runs inherits the key.
      key_in_environment: false,
      path: "/v1/models",
    });
    const post = await fetch(`${base}/v1/chat/completions`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: "{}" });
    expect(post.status).toBe(200);
  });

  it("refuses with 401 any request without the key, with another one, or on any path: another user of the machine cannot use the model", async () => {
    const attempts: [string, RequestInit][] = [
      ["/v1/models", {}],
      ["/v1/models", { headers: { authorization: "Bearer not-the-key" } }],
      ["/v1/models", { headers: { authorization: `Bearer ${key}x` } }],
      ["/v1/models", { headers: { authorization: key } }],
      ["/v1/chat/completions", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ messages: [{ role: "user", content: "hi" }] }) }],
      ["/health", {}],
    ];
    for (const [path, init] of attempts) {
      const res = await fetch(`${base}${path}`, init);
      expect([path, res.status]).toEqual([path, 401]);
      await res.arrayBuffer();
    }
  });
});
