import { z } from "zod";
import { must } from "./fields.js";

/** Lines of a machine's log (its agent's, or a stack's runtime's), as an admin reads them, oldest first. */
export interface LogPage {
  object: "log";
  lines: {
    /** Numbered in the order the machine wrote them: ask for those after the last one read. */
    seq: number;
    /** Milliseconds since the epoch. */
    at: number;
    /** `info`, `warn`, `error`, or `output` (a line the runtime's process wrote). */
    level: string;
    /** Secrets redacted as in the agent's own log. */
    text: string;
  }[];
  /** Lines older than the first were dropped on the machine (it keeps its last 500 of each). */
  truncated: boolean;
  /** What to send as `after` for the lines that come next. */
  next: number;
}

const AFTER = must("an integer of at least 0");
const LIMIT = must("an integer from 1 to 200");

/** A log read's query: the lines after line `after` (0: the oldest kept), at most `limit` (200 by default). */
export const logQuery = () =>
  z.strictObject({
    after: z.coerce.number(AFTER).int(AFTER).min(0, AFTER).max(Number.MAX_SAFE_INTEGER, AFTER).default(0),
    limit: z.coerce.number(LIMIT).int(LIMIT).min(1, LIMIT).max(200, LIMIT).default(200),
  });
