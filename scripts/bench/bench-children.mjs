// What the benchmark scripts share: their child processes (started from a script, ready once they print a JSON
// line with a given key), their CPU time from /proc, and percentiles.
import { execFileSync, spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const TICK_MS = 1000 / Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim());

/** The processes a benchmark started, to stop at its end. */
export const children = [];

/**
 * Starts a script of the repository (path from its root) and resolves with its first JSON line that has `key`,
 * and `next(key)`, which resolves with its next such line.
 */
export function start(script, args, key, env = {}) {
  const child = spawn(process.execPath, [join(root, script), ...args], { stdio: ["ignore", "pipe", "inherit"], env: { ...process.env, ...env } });
  children.push(child);
  const waiting = [];
  const next = (k) => new Promise((resolve) => waiting.push({ key: k, resolve }));
  createInterface({ input: child.stdout }).on("line", (line) => {
    const msg = JSON.parse(line);
    const i = waiting.findIndex((w) => w.key in msg);
    if (i >= 0) waiting.splice(i, 1)[0].resolve(msg);
  });
  return new Promise((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`${script} exited ${code}`)));
    void next(key).then((msg) => resolve({ child, msg, next }));
  });
}

/**
 * A process's CPU time so far, in ms: the scheduler's own count in ns (`/proc/PID/task/TID/schedstat`, summed
 * over its threads), where `/proc/PID/stat` counts in ticks of 10 ms, too coarse for a few requests' worth (it is
 * the fallback where schedstat is missing). Node's threads live as long as their process, so none takes its time
 * away by ending between two readings.
 */
export const cpuMs = (pid) => {
  try {
    let ns = 0;
    for (const tid of readdirSync(`/proc/${pid}/task`)) ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8").split(" ")[0]);
    return ns / 1e6;
  } catch {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
    return (Number(fields[11]) + Number(fields[12])) * TICK_MS;
  }
};

/** The `p`th percentile of `xs`. */
export const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];
