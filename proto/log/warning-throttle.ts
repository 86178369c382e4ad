import type { Logger } from "./logger.js";

/**
 * Warnings a peer can cause as often as it likes (an agent's reports, a stranger's link attempts, messages on the
 * relays' bus), written at most once per interval for each cause, with how many were left unwritten since the
 * last. Causes are names given by the code, at most with an id the relay vouches for (a machine's, once its
 * credentials held; never a peer's own words), so the memory stays bounded.
 * The line goes to the logger given with it (with its bindings: the machine or link that caused it).
 */
export class WarningThrottle {
  private readonly last = new Map<string, { at: number; unwritten: number }>();

  constructor(
    private readonly intervalMs = 60_000,
    private readonly now: () => number = Date.now,
  ) {}

  warn(cause: string, log: Logger, message: string, fields: Record<string, unknown> = {}): void {
    const now = this.now();
    const seen = this.last.get(cause);
    if (seen && now - seen.at < this.intervalMs) {
      seen.unwritten++;
      return;
    }
    this.last.set(cause, { at: now, unwritten: 0 });
    log.warn(message, seen?.unwritten ? { ...fields, unwrittenSinceLast: seen.unwritten } : fields);
  }
}
