import { execFile } from "node:child_process";

export interface ProbeOptions {
  env?: NodeJS.ProcessEnv;
  /** Killed (SIGTERM) after this long. */
  timeoutMs: number;
  /** Kills the probe when it aborts. */
  signal?: AbortSignal;
  maxBuffer?: number;
}

/**
 * Runs a hardware tool (`nvidia-smi`, `ioreg`) and resolves with what it printed, or null when it is missing,
 * fails, times out or is aborted.
 *
 * It kills the tool itself, and only a tool that started: Node 20's `execFile` given a `signal` or a `timeout`
 * calls `child.kill()` on abort, and for a tool that is not installed (ENOENT) that call, made before Node has
 * reported the failed start, is `kill(0, SIGTERM)`: the signal goes to the agent's whole process group (seen:
 * an agent stopped while it looked for `nvidia-smi` on a machine without one took its parent and siblings
 * down with it).
 */
export function runProbe(file: string, args: string[], options: ProbeOptions): Promise<string | null> {
  return new Promise((resolve) => {
    if (options.signal?.aborted) return resolve(null);
    const child = execFile(file, args, { env: options.env, windowsHide: true, maxBuffer: options.maxBuffer }, (err, stdout) => {
      clearTimeout(timer);
      options.signal?.removeEventListener("abort", kill);
      resolve(err ? null : String(stdout));
    });
    // A child that never started has no pid: there is nothing to kill (and kill(0) would hit our own group).
    const kill = () => {
      if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
    };
    const timer = setTimeout(kill, options.timeoutMs);
    options.signal?.addEventListener("abort", kill, { once: true });
  });
}
