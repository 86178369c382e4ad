import type { Logger } from "../../proto/index.js";
import type { AuditActor, AuditEvent, Store } from "../store/index.js";

/** What is recorded of an action; the time is the log's. */
export type AuditEntry = Omit<AuditEvent, "id" | "at" | "outcome"> & { outcome?: AuditEvent["outcome"] };

/** How often old events are deleted. */
const PRUNE_EVERY_MS = 3_600_000;

/**
 * The audit log: each security-relevant action (sign-ins, people, keys, machines, stacks, organization
 * limits) with who did it, when and from where. Kept in the database, readable per organization, and written
 * to the relay's log as one JSON line each (`"msg":"audit"`), so a log shipper gets it without the database.
 * Recording never undoes or fails the action it records: a database that refuses the row is reported as a
 * storage failure, and the log line is written regardless. Events older than the retention are deleted every
 * hour.
 */
export class AuditLog {
  private readonly pruner: NodeJS.Timeout;
  private readonly pending = new Set<Promise<unknown>>();

  constructor(
    private readonly store: Store,
    private readonly log: Logger,
    private readonly options: { retentionMs: number; onWriteError?: (what: string, err: unknown) => void; now?: () => number },
  ) {
    this.pruner = setInterval(() => void this.prune(), PRUNE_EVERY_MS);
    this.pruner.unref();
    void this.prune();
  }

  /** Records an action (a success unless said); resolves once it is in the database, or its write failed. */
  async record(entry: AuditEntry): Promise<void> {
    const event = { ...entry, outcome: entry.outcome ?? "success", at: (this.options.now ?? Date.now)() } as const;
    this.log.info("audit", {
      action: event.action,
      outcome: event.outcome,
      org: event.orgId,
      actor: event.actor,
      address: event.address,
      target: event.target,
      ...(event.detail ? { detail: event.detail } : {}),
    });
    // An event of no organization (a sign-in to a login that does not exist) is nobody's to read: the log keeps it,
    // the database does not (a stream of made-up logins would only fill it).
    if (event.orgId === null) return;
    const write = this.store.audit.insert(event).catch((err: unknown) => this.options.onWriteError?.("the audit log", err));
    this.pending.add(write);
    try {
      await write;
    } finally {
      this.pending.delete(write);
    }
  }

  /** Waits for the writes under way, and stops pruning. */
  async close(): Promise<void> {
    clearInterval(this.pruner);
    await Promise.all(this.pending);
  }

  private async prune(): Promise<void> {
    const before = (this.options.now ?? Date.now)() - this.options.retentionMs;
    await this.store.audit.prune(before).catch((err: unknown) => this.options.onWriteError?.("the audit log's pruning", err));
  }
}

/** Who did an action, as the audit log keeps it: the operator, a signed-in user, or `makina up`'s first start. */
export function actorOf(actor: { kind: "operator" } | { kind: "bootstrap" } | { kind: "user"; user: { id: string; login: string } }): AuditActor {
  if (actor.kind === "user") return { kind: "user", id: actor.user.id, login: actor.user.login };
  return { kind: actor.kind, id: null, login: null };
}
