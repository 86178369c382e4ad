import { MakinaError } from "../proto/index.js";

/** Exit statuses of `makina`: 0 success, 1 failure of what was asked, 2 bad usage. */
export const EXIT = { ok: 0, failure: 1, usage: 2 } as const;

/** An error the CLI reports as one line and an exit status. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: number = EXIT.failure,
  ) {
    super(message);
    this.name = "CliError";
  }
}

/** The exit status and message for anything a command threw; the one place exit codes are decided. */
export function exitFor(err: unknown): { code: number; message: string } {
  if (err instanceof CliError) return { code: err.exitCode, message: err.message };
  if (err instanceof MakinaError) return { code: EXIT.failure, message: err.message };
  if (err instanceof Error && (err.name === "ConfigError" || err.name === "AgentConfigError")) return { code: EXIT.usage, message: err.message };
  return { code: EXIT.failure, message: err instanceof Error ? err.message : String(err) };
}
