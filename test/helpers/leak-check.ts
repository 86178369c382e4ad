import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import { afterAll } from "vitest";
import { REPO_ROOT } from "./models.js";

/**
 * After every test file, nothing it started may be left: no socket, no timer, no child process. Each file runs
 * in a process of its own (vitest's forks pool), so what is open at its end and was not at its start is what the
 * file (or the code it ran) left behind: a part of a relay or an agent that never stopped, a listener left
 * open, a child never reaped. In the manner of connect-es's `useNodeServer`, which fails a test that leaves
 * its server's connections open.
 *
 * - Sockets are this process's open file descriptors that are sockets (TCP, Unix, listening or connected),
 *   read from /proc: they are counted whether or not they keep the event loop alive (an `unref`'d server is
 *   still a leak).
 * - Timers are every `setTimeout` and `setInterval` made through the globals by our code (its stack has a file
 *   of this repository outside node_modules) that neither fired nor was cleared. Not seen: `node:timers/promises`,
 *   `setImmediate` and `AbortSignal.timeout` (they are promises or signals, which an abort ends).
 * - Child processes are this process's children, read from /proc.
 *
 * What closes asynchronously is given a moment: the check waits up to `SETTLE_MS` for the leaks to go before it
 * fails the file, naming each (a socket's address, a timer's stack, a child's command line).
 */
const SETTLE_MS = 3000;

interface TimerRecord {
  timer: NodeJS.Timeout;
  made: Error;
  repeats: boolean;
}

/** Whether a timer neither fired (a timeout) nor was cleared: Node marks both `_destroyed`. */
const pending = (t: NodeJS.Timeout) => !(t as unknown as { _destroyed: boolean })._destroyed;

/** The sockets this process holds open, by inode. */
function openSockets(): Set<string> {
  const inodes = new Set<string>();
  for (const fd of readdirSync("/proc/self/fd")) {
    let target: string;
    try {
      target = readlinkSync(`/proc/self/fd/${fd}`);
    } catch {
      continue;
    }
    const m = /^socket:\[(\d+)\]$/.exec(target);
    if (m) inodes.add(m[1]!);
  }
  return inodes;
}

/** What a socket is, for the failure message: its local and remote address and state, or its Unix path. */
function describeSocket(inode: string): string {
  const hex = (h: string) => {
    const [addr, port] = h.split(":");
    const ip = addr!.length === 8 ? (addr!.match(/../g) ?? []).reverse().map((b) => parseInt(b, 16)).join(".") : /^0+$/.test(addr!) ? "[::]" : `[${addr}]`;
    return `${ip}:${parseInt(port!, 16)}`;
  };
  const states: Record<string, string> = { "01": "established", "0A": "listening", "06": "time-wait", "08": "close-wait" };
  for (const table of ["tcp", "tcp6"]) {
    let text = "";
    try {
      text = readFileSync(`/proc/self/net/${table}`, "utf8");
    } catch {
      continue;
    }
    for (const line of text.split("\n").slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f[9] === inode) return `TCP ${hex(f[1]!)} → ${hex(f[2]!)} (${states[f[3]!] ?? f[3]})`;
    }
  }
  try {
    for (const line of readFileSync("/proc/self/net/unix", "utf8").split("\n").slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f[6] === inode) return `Unix socket ${f[7] ?? "(unnamed)"}`;
    }
  } catch {
    // No /proc/net/unix: the inode alone says it.
  }
  return `socket inode ${inode}`;
}

/** This process's children (pid → command line). */
function children(): Map<number, string> {
  const found = new Map<number, string>();
  for (const task of readdirSync("/proc/self/task")) {
    let list = "";
    try {
      list = readFileSync(`/proc/self/task/${task}/children`, "utf8");
    } catch {
      continue;
    }
    for (const pid of list.trim().split(/\s+/).filter(Boolean).map(Number)) {
      let cmd = "";
      try {
        cmd = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ").trim();
      } catch {
        continue;
      }
      // A zombie (exited, not yet reaped) has no command line: it holds nothing.
      if (cmd) found.set(pid, cmd);
    }
  }
  return found;
}

/** Our frames of a timer's stack (this repository's files, outside node_modules and this file). */
function ourFrames(made: Error): string[] {
  return (made.stack ?? "")
    .split("\n")
    .slice(1)
    .map((l) => l.trim())
    .filter((l) => l.includes(REPO_ROOT) && !l.includes("/node_modules/") && !l.includes("leak-check.ts"));
}

/** Counts every timer made through the globals from now on. */
function watchTimers(): TimerRecord[] {
  const made: TimerRecord[] = [];
  const wrap = <F extends typeof setTimeout | typeof setInterval>(original: F, repeats: boolean): F => {
    const wrapped = function (this: unknown, ...args: Parameters<F>) {
      const timer = (original as (...a: unknown[]) => NodeJS.Timeout).apply(this, args);
      // Cleared ones are let go now and then, so a long file does not keep every timer it ever made.
      if (made.length > 50_000) made.splice(0, made.length, ...made.filter((r) => pending(r.timer)));
      made.push({ timer, made: new Error("timer made"), repeats });
      return timer;
    };
    return Object.assign(wrapped, original) as unknown as F;
  };
  globalThis.setTimeout = wrap(globalThis.setTimeout, false);
  globalThis.setInterval = wrap(globalThis.setInterval, true);
  return made;
}

/** What is still open: sockets and children beyond the baseline, and our timers still pending. */
function leaks(baseline: { sockets: Set<string>; children: Map<number, string> }, timers: TimerRecord[]): string[] {
  const found: string[] = [];
  for (const inode of openSockets()) if (!baseline.sockets.has(inode)) found.push(`socket: ${describeSocket(inode)}`);
  for (const [pid, cmd] of children()) if (!baseline.children.has(pid)) found.push(`child process ${pid}: ${cmd.slice(0, 200)}`);
  for (const r of timers) {
    if (!pending(r.timer)) continue;
    const frames = ourFrames(r.made);
    if (frames.length === 0) continue;
    found.push(`${r.repeats ? "interval" : "timeout"} made at ${frames.slice(0, 4).join(" ← ")}`);
  }
  return found;
}

/** Registers the check around the test file that imports it (vitest's setupFiles does, for every file). */
export function checkForLeaks(): void {
  // Taken before the test file is imported: what its module-level code opens counts too.
  const baseline = { sockets: openSockets(), children: children() };
  const timers = watchTimers();
  // Registered before the file's own hooks, so it runs after them (vitest runs after-hooks in reverse).
  afterAll(async () => {
    const deadline = Date.now() + SETTLE_MS;
    let left = leaks(baseline, timers);
    while (left.length > 0 && Date.now() < deadline) {
      await new Promise((r) => setImmediate(r));
      await new Promise((r) => setTimeout(r, 20));
      left = leaks(baseline, timers);
    }
    if (left.length > 0) throw new Error(`The test file left ${left.length} thing(s) open:\n  ${left.join("\n  ")}`);
  }, SETTLE_MS + 5000);
}
