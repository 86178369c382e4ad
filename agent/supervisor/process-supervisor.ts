import { StringDecoder } from "node:string_decoder";
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { EventEmitter } from "node:events";
import { setTimeout as sleep } from "node:timers/promises";
import { MakinaError, type Logger } from "../../proto/index.js";
import { Backoff } from "../flow/index.js";

/**
 * Supervised process states: `starting` (spawned, readiness probe not yet
 * passing) → `ready`; a ready process that stops answering its health probe
 * → `unresponsive` (it is killed, and restarts like a crashed one); after an
 * unexpected exit → `restarting` (backing off) → `starting` …; too many early
 * exits in a row → `failed` (final); `stop()` → `stopped` (final, never restarted).
 */
export type SupervisedState = "starting" | "ready" | "unresponsive" | "restarting" | "failed" | "stopped";

/** Options of {@link ProcessSupervisor}. */
export interface SupervisorOptions {
  /** Name for logs and errors, e.g. `vllm stk_123`. */
  name: string;
  command: string;
  /** Its arguments, or what gives them at each start (a restart may start it otherwise). */
  args: string[] | (() => string[]);
  /**
   * Run the command under the lifeline (supervisor/lifeline.ts), so that it stops when the agent dies, even by
   * SIGKILL. For programs that do not watch their stdin themselves. @default false
   */
  lifeline?: boolean;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Readiness probe: resolves true once the process serves. Called every `probeIntervalMs` while starting. */
  ready: (signal: AbortSignal) => Promise<boolean>;
  /** @default 250 */
  probeIntervalMs?: number;
  /** Once ready, the same probe runs this often to catch a process that is alive but wedged. @default 5000 */
  healthIntervalMs?: number;
  /** How long one health probe may take. @default 10000 */
  healthTimeoutMs?: number;
  /** Health probes missed in a row that make a ready process `unresponsive`. @default 3 */
  maxMissedProbes?: number;
  /** A start that is not ready within this time counts as a crash. @default 600000 */
  startTimeoutMs?: number;
  /** A process that exits before running this long counts toward the crash loop. @default 10000 */
  minUptimeMs?: number;
  /** Early exits in a row that make a crash loop. @default 5 */
  maxEarlyExits?: number;
  /** Restart delay bounds (exponential with jitter). @default 500 and 30000 */
  backoffMinMs?: number;
  backoffMaxMs?: number;
  /** Time between SIGTERM and SIGKILL of the process group on stop. @default 5000 */
  stopGraceMs?: number;
  log: Logger;
  /** Each line the process writes (stdout and stderr), as it comes. */
  onOutput?: (line: string) => void;
}

/** The compiled lifeline next to this module, or in dist/ when running from TypeScript sources (tests build first). */
function lifelineEntry(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  if (existsSync(join(here, "lifeline.js"))) return join(here, "lifeline.js");
  for (let dir = here; dir !== dirname(dir); dir = dirname(dir)) {
    const built = join(dir, "dist", "agent", "supervisor", "lifeline.js");
    if (existsSync(built)) return built;
  }
  throw new MakinaError("runtime_unavailable", "The runtime lifeline is not built: run `npm run build`.");
}

/** The last lines a process wrote, kept off enumerable error fields so logs stay small; each line also told to `onLine`. */
class OutputTail {
  private lines: string[] = [];
  /** What came after the last line break, by stream: a line (a token in it) is told whole, never in pieces. */
  private readonly partial = new Map<string, { decoder: StringDecoder; text: string }>();
  constructor(private readonly onLine?: (line: string) => void) {}
  push(chunk: Buffer, stream = "stdout"): void {
    let open = this.partial.get(stream);
    if (!open) this.partial.set(stream, (open = { decoder: new StringDecoder("utf8"), text: "" }));
    const parts = (open.text + open.decoder.write(chunk)).split("\n");
    // A line longer than any kept is told as it is so far.
    open.text = parts.pop() ?? "";
    if (open.text.length > 8192) {
      parts.push(open.text.slice(0, 8192));
      open.text = "";
    }
    this.keep(parts.filter(Boolean));
  }
  /** A line of the supervisor's own (why it stopped the process), kept and told as the process's are. */
  say(line: string): void {
    this.keep(line.split("\n").filter(Boolean));
  }
  /** The process ended: what it wrote after its last line break is a line too. */
  flush(): void {
    for (const open of this.partial.values()) this.keep([open.text + open.decoder.end()].filter(Boolean));
    this.partial.clear();
  }
  private keep(lines: string[]): void {
    for (const line of lines) this.onLine?.(line);
    this.lines.push(...lines);
    if (this.lines.length > 20) this.lines = this.lines.slice(-20);
  }
  toString(): string {
    return this.lines.join("\n");
  }
}

/**
 * Runs one child process the way a process manager would: its own process
 * group (so stopping it kills everything it started), a readiness probe
 * instead of sleeps, restarts with capped exponential backoff, and a crash-loop
 * limit that ends in `failed`.
 */
export class ProcessSupervisor extends EventEmitter<{ state: [SupervisedState] }> {
  state: SupervisedState = "starting";
  /** Restarts since start. */
  restarts = 0;
  /** Why the process last failed. */
  lastError: string | null = null;
  private child: ChildProcess | undefined;
  private readonly tail: OutputTail;
  private readonly stopController = new AbortController();
  private loop: Promise<void> | undefined;
  private readonly backoff: Backoff;

  constructor(private readonly o: SupervisorOptions) {
    super();
    this.tail = new OutputTail(o.onOutput);
    this.backoff = new Backoff({ minMs: o.backoffMinMs ?? 500, maxMs: o.backoffMaxMs ?? 30_000 });
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  private set(state: SupervisedState): void {
    if (this.state === state) return;
    this.state = state;
    this.o.log.info("runtime process state", { runtime: this.o.name, state, restarts: this.restarts, error: this.lastError });
    this.emit("state", state);
  }

  /** Starts supervising; resolves once the process is ready the first time, rejects if it fails first. */
  start(): Promise<void> {
    this.loop ??= this.run();
    return new Promise((resolve, reject) => {
      const check = () => {
        if (this.state === "ready") return done(resolve);
        if (this.state === "failed" || this.state === "stopped") {
          return done(() => reject(new MakinaError("runtime_unavailable", `${this.o.name} did not start: ${this.lastError ?? this.state}`)));
        }
      };
      const done = (fn: () => void) => {
        this.off("state", check);
        fn();
      };
      this.on("state", check);
      check();
    });
  }

  private async run(): Promise<void> {
    let earlyExits = 0;
    while (!this.stopController.signal.aborted) {
      this.set("starting");
      const startedAt = Date.now();
      const exit = await this.runOnce();
      if (this.stopController.signal.aborted) break;
      const ranMs = Date.now() - startedAt;
      earlyExits = ranMs < (this.o.minUptimeMs ?? 10_000) ? earlyExits + 1 : 0;
      if (ranMs >= (this.o.minUptimeMs ?? 10_000)) this.backoff.reset();
      this.tail.flush();
      this.lastError = `${exit}${this.tail.toString() ? `; last output:\n${this.tail}` : ""}`;
      if (earlyExits >= (this.o.maxEarlyExits ?? 5)) {
        this.lastError = `crash loop: exited ${earlyExits} times in a row within ${this.o.minUptimeMs ?? 10_000} ms of starting (${exit})`;
        this.set("failed");
        return;
      }
      this.restarts++;
      this.set("restarting");
      await sleep(this.backoff.next(), undefined, { signal: this.stopController.signal }).catch(() => {});
    }
    this.set("stopped");
  }

  /** One run of the process: spawn, probe until ready, wait for exit. Resolves with how it ended. */
  private async runOnce(): Promise<string> {
    // stdin is a lifeline: the agent never writes to it, and it closes when the agent dies, even by SIGKILL.
    // A child that watches it (the GGUF server does) exits instead of living on as an orphan.
    const given = typeof this.o.args === "function" ? this.o.args() : this.o.args;
    const [command, args] = this.o.lifeline ? [process.execPath, [lifelineEntry(), this.o.command, ...given]] : [this.o.command, given];
    const child = spawn(command, args, { env: this.o.env, cwd: this.o.cwd, detached: true, stdio: ["pipe", "pipe", "pipe"] });
    child.stdin?.on("error", () => {});
    this.child = child;
    child.stdout?.on("data", (d: Buffer) => this.tail.push(d, "stdout"));
    child.stderr?.on("data", (d: Buffer) => this.tail.push(d, "stderr"));
    const exited = new Promise<string>((resolve) => {
      child.once("error", (err) => resolve(`could not start ${this.o.command}: ${err.message}`));
      child.once("exit", (code, signal) => resolve(signal ? `killed by ${signal}` : `exited with code ${code}`));
    });
    const probe = new AbortController();
    const probing = (async () => {
      const deadline = Date.now() + (this.o.startTimeoutMs ?? 600_000);
      while (!probe.signal.aborted) {
        if (await this.o.ready(probe.signal).catch(() => false)) {
          if (probe.signal.aborted) return;
          this.set("ready");
          return this.watchHealth(probe.signal);
        }
        if (Date.now() > deadline) {
          this.tail.say(`not ready after ${this.o.startTimeoutMs ?? 600_000} ms`);
          this.killGroup("SIGKILL");
          return;
        }
        await sleep(this.o.probeIntervalMs ?? 250, undefined, { signal: probe.signal }).catch(() => {});
      }
    })();
    const result = await exited;
    probe.abort();
    await probing;
    this.child = undefined;
    return result;
  }

  /**
   * Probes a ready process until it exits: one that misses `maxMissedProbes` in a row is alive but wedged (a
   * deadlock, a stopped process, a driver hang). It is marked `unresponsive`, so that it takes no requests,
   * and killed, so that it restarts like a crashed one.
   */
  private async watchHealth(signal: AbortSignal): Promise<void> {
    const interval = this.o.healthIntervalMs ?? 5000;
    const timeout = this.o.healthTimeoutMs ?? 10_000;
    const maxMissed = this.o.maxMissedProbes ?? 3;
    let missed = 0;
    while (!signal.aborted) {
      await sleep(interval, undefined, { signal }).catch(() => {});
      if (signal.aborted) return;
      const attempt = AbortSignal.any([signal, AbortSignal.timeout(timeout)]);
      // A probe that ignores its signal still loses the race against the timeout.
      const answered = await Promise.race([
        this.o.ready(attempt).catch(() => false),
        new Promise<false>((resolve) => attempt.addEventListener("abort", () => resolve(false), { once: true })),
      ]);
      if (signal.aborted) return;
      if (answered) {
        missed = 0;
        continue;
      }
      if (++missed < maxMissed) continue;
      this.lastError = `not answering its health probe (${missed} missed in a row, ${interval} ms apart): restarting it`;
      this.tail.say(this.lastError);
      this.set("unresponsive");
      this.killGroup("SIGKILL");
      return;
    }
  }

  private killGroup(signal: NodeJS.Signals): void {
    const pid = this.child?.pid;
    if (!pid) return;
    try {
      process.kill(-pid, signal);
    } catch {
      // The group is already gone.
    }
  }

  /** Stops the process group for good (SIGTERM, then SIGKILL after the grace period). Idempotent. */
  async stop(): Promise<void> {
    if (this.stopController.signal.aborted) return this.loop;
    this.stopController.abort();
    const child = this.child;
    if (child && child.exitCode === null && child.signalCode === null) {
      const gone = new Promise<void>((resolve) => child.once("exit", () => resolve()));
      this.killGroup("SIGTERM");
      const timer = setTimeout(() => this.killGroup("SIGKILL"), this.o.stopGraceMs ?? 5000);
      await gone;
      clearTimeout(timer);
    }
    await this.loop;
  }
}
