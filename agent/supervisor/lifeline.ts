/**
 * `node lifeline.js COMMAND [ARGS…]`: runs COMMAND as its child and ties it to the agent's life. The agent holds
 * this process's stdin open and never writes to it; when it closes, the agent is gone (even killed with SIGKILL,
 * which no handler sees), and the child is stopped (SIGTERM, then SIGKILL 10 s later) instead of living on as an
 * orphan holding GPU memory and a port. Model servers that cannot watch a pipe themselves (vLLM, MLX) run under
 * it; the GGUF server watches its stdin itself. Signals sent to this process go to the child; it exits as the
 * child does.
 */
import { spawn } from "node:child_process";

const [command, ...args] = process.argv.slice(2);
if (!command) {
  process.stderr.write("lifeline: usage: node lifeline.js COMMAND [ARGS…]\n");
  process.exit(2);
}
const child = spawn(command, args, { stdio: ["ignore", "inherit", "inherit"] });
let stopping = false;
const stop = (signal: NodeJS.Signals) => {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill(signal);
  if (stopping) return;
  stopping = true;
  setTimeout(() => child.kill("SIGKILL"), 10_000).unref();
};
child.once("error", (err) => {
  process.stderr.write(`could not start ${command}: ${err.message}\n`);
  process.exit(127);
});
child.once("exit", (code, signal) => process.exit(code ?? (signal ? 128 + (signal === "SIGKILL" ? 9 : 15) : 1)));
for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"] as const) process.on(signal, () => stop(signal));
process.stdin.on("end", () => stop("SIGTERM"));
process.stdin.on("close", () => stop("SIGTERM"));
process.stdin.resume();
