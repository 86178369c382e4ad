import type { Logger } from "../log/index.js";

/**
 * One part of a process (a relay's store, its link server, a listener; an agent's control socket): how it starts
 * and how it stops. `start` gives the part's value (the store, the server), which later parts are built with;
 * `stop` is given it back.
 */
export interface Part<T> {
  /** What the part is, in the words a failed start says (`the install listener`). */
  name: string;
  start(): T | Promise<T>;
  /** Undoes `start`; absent for a step that leaves nothing to undo (a check, a row written). */
  stop?(value: T): void | Promise<void>;
  /**
   * What changes the part's start, said when it fails (`--install-port or MAKINA_INSTALL_PORT`); may depend on
   * the error (a port taken is a port setting, a refused file a path).
   */
  setting?: string | ((err: unknown) => string | undefined);
}

/** A part's state: `started` once its start returned, `stopped` once its stop did (or failed, logged). */
export type PartState = "starting" | "started" | "stopping" | "stopped" | "failed";

/**
 * A start that failed: which part, why, and which setting changes it. Every part started before it has been
 * stopped, in reverse, when this is thrown.
 */
export class PartStartError extends Error {
  override readonly name = "PartStartError";
  constructor(
    /** The process that could not start (`relay`, `agent`). */
    readonly process: string,
    /** The part that failed. */
    readonly part: string,
    /** The setting that changes it, if one does. */
    readonly setting: string | undefined,
    /** What the part threw. */
    override readonly cause: unknown,
  ) {
    const reason = reasonOf(cause);
    // A reason that already names the setting's flag (`start this one with another --data-dir`) is not told it twice.
    const flag = setting?.split(" ")[0];
    const hint = setting && !(flag && reason.includes(flag)) ? `; change it with ${setting}` : "";
    super(`The ${process} could not start: ${part}: ${reason}${hint}.`);
  }
}

/** Why a part failed, in a line: a port in use said as such rather than as `listen EADDRINUSE …`. */
function reasonOf(err: unknown): string {
  const e = err as NodeJS.ErrnoException & { address?: string; port?: number };
  if (e?.code === "EADDRINUSE") return `${e.address ?? "the address"}${e.port !== undefined ? `:${e.port}` : ""} is already in use by another program`;
  if (e?.code === "EACCES" && e.syscall === "listen") return `no permission to listen on ${e.address ?? "the address"}${e.port !== undefined ? `:${e.port}` : ""} (ports below 1024 need privileges)`;
  if (e?.code === "EADDRNOTAVAIL") return `${e.address ?? "the address"} is not an address of this machine`;
  const text = err instanceof Error ? err.message : String(err);
  return text.replace(/\.$/, "");
}

/**
 * A process as an ordered list of parts. `start` starts the next part; if it throws, every part started before
 * it is stopped, newest first, and the start fails with a {@link PartStartError} naming the part and its
 * setting, so a failed start leaks nothing. `stop` stops every part, newest first: once, whoever calls it. A
 * part whose stop throws is logged, and the parts below it still stop.
 */
export class Parts {
  private readonly started: { part: Part<unknown>; value: unknown }[] = [];
  private readonly states = new Map<string, PartState>();
  private stopping: Promise<void> | undefined;

  constructor(
    /** `relay` or `agent`: said in a failed start's message. */
    private readonly process: string,
    private readonly log: Logger,
  ) {}

  /** Starts `part` after those already started; resolves to its value. */
  async start<T>(part: Part<T>): Promise<T> {
    if (this.stopping) throw new PartStartError(this.process, part.name, undefined, new Error("the process is stopping"));
    this.states.set(part.name, "starting");
    let value: T;
    try {
      value = await part.start();
    } catch (err) {
      this.states.set(part.name, "failed");
      const setting = typeof part.setting === "function" ? part.setting(err) : part.setting;
      this.log.warn("a part failed to start; stopping the parts already started", { part: part.name, error: reasonOf(err) });
      await this.stop();
      throw new PartStartError(this.process, part.name, setting, err);
    }
    if (this.stopping) {
      // The process began to stop while this part started: it is stopped at once, not left behind.
      this.states.set(part.name, "stopping");
      await Promise.resolve(part.stop?.(value)).catch((err: unknown) => this.log.error("a part failed to stop", { part: part.name, error: err instanceof Error ? err.message : String(err) }));
      this.states.set(part.name, "stopped");
      throw new PartStartError(this.process, part.name, undefined, new Error("the process is stopping"));
    }
    this.started.push({ part: part as Part<unknown>, value });
    this.states.set(part.name, "started");
    return value;
  }

  /** Each part's name and state, in the order they started. */
  list(): { name: string; state: PartState }[] {
    return [...this.states].map(([name, state]) => ({ name, state }));
  }

  /** Stops every started part, newest first. Idempotent. */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      for (let i = this.started.length - 1; i >= 0; i--) {
        const { part, value } = this.started[i]!;
        this.states.set(part.name, "stopping");
        try {
          await part.stop?.(value);
        } catch (err) {
          this.log.error("a part failed to stop", { part: part.name, error: err instanceof Error ? err.message : String(err) });
        }
        this.states.set(part.name, "stopped");
      }
    })();
    return this.stopping;
  }
}
