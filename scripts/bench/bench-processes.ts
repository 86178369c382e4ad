import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { REPO_ROOT } from "../../test/helpers/models.js";

/** A node script started by a benchmark, read line by line as JSON. */
export interface BenchProcess {
  child: ChildProcess;
  /** Its first JSON line that has `key`. */
  msg: Record<string, unknown>;
  /** Resolves with its next JSON line that has `key` (or one it printed before and nobody took). */
  next: (key: string) => Promise<Record<string, unknown>>;
  /** Called with every line nobody waits for (they are kept for `next` as well). */
  onLine: (listener: (msg: Record<string, unknown>) => void) => void;
}

/** Starts node scripts of the repository and keeps them, to be killed when the benchmark ends. */
export class BenchProcesses {
  readonly children: ChildProcess[] = [];

  /** Starts `script` and resolves once it printed a JSON line that has `key`. */
  start(script: string, args: string[], key: string, env: NodeJS.ProcessEnv = {}): Promise<BenchProcess> {
    const child = spawn(process.execPath, [join(REPO_ROOT, script), ...args], { stdio: ["ignore", "pipe", "inherit"], env: { ...process.env, ...env } });
    this.children.push(child);
    const lines: Record<string, unknown>[] = [];
    const listeners: ((msg: Record<string, unknown>) => void)[] = [];
    const waiting: { key: string; resolve: (m: Record<string, unknown>) => void }[] = [];
    createInterface({ input: child.stdout! }).on("line", (line) => {
      const msg = JSON.parse(line) as Record<string, unknown>;
      const w = waiting.findIndex((x) => x.key in msg);
      if (w >= 0) return waiting.splice(w, 1)[0]!.resolve(msg);
      if (listeners.length) for (const l of listeners) l(msg);
      else lines.push(msg);
    });
    const next = (k: string) =>
      new Promise<Record<string, unknown>>((resolve, reject) => {
        const found = lines.findIndex((m) => k in m);
        if (found >= 0) return resolve(lines.splice(found, 1)[0]!);
        waiting.push({ key: k, resolve });
        child.once("exit", (code) => reject(new Error(`${script} exited ${code}`)));
      });
    return next(key).then((msg) => ({ child, msg, next, onLine: (l) => listeners.push(l) }));
  }

  killAll(signal: NodeJS.Signals = "SIGTERM"): void {
    for (const c of this.children) if (c.exitCode === null && c.signalCode === null) c.kill(signal);
  }
}

const TICK_MS = 1000 / Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim());

/** CPU time a process used so far (user and system), in ms, from /proc/PID/stat. */
export function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return (Number(fields[11]) + Number(fields[12])) * TICK_MS;
}

/** A process's resident memory now, in bytes, from /proc/PID/status. */
export function rssBytes(pid: number): number {
  const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return m ? Number(m[1]) * 1024 : 0;
}

/** The p-th percentile of `xs`. */
export const percentile = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;
