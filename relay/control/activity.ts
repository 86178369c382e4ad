import { MakinaError } from "../../proto/index.js";
import type { Actor } from "../auth/index.js";
import type { AuditEvent, AuditFilter, Machine, Stack } from "../store/index.js";
import type { RequestFilter, RequestLogEntry, UsageSeries } from "../usage/index.js";
import type { ControlContext } from "./control-context.js";

/** A logged request as a list shows it, with its key's and stack's names. */
export type ListedRequest = RequestLogEntry & { keyName: string | null; stackName: string | null };

/**
 * What an organization's people read of what happened: usage over time, the request log, the audit log, the
 * stacks and machines by name, and which organization's live events a caller follows. Each read is scoped to
 * what the actor sees.
 */
export class Activity {
  constructor(private readonly c: ControlContext) {}

  /**
   * Requests and tokens over time, per key or model, for anyone of the organization: the busiest groups' series,
   * and every group's totals (the busiest first), a key's with its name so a list can search them.
   */
  async usage(actor: Actor, orgRef: string | null | undefined, range: "24h" | "30d", by: "key" | "model") {
    const { series, totals, ...rest } = await this.c.deps.usage.series(this.c.policy(actor).org(orgRef).id, range, by, { listed: Infinity });
    const names = by === "key" ? await this.c.store.keys.namesOf(totals.map((t) => t.group)) : new Map<string, string>();
    const named = <T extends { group: string }>(g: T) => ({ ...g, name: names.get(g.group) ?? null });
    return { ...rest, series: series.map(named) as (UsageSeries & { name: string | null })[], totals: totals.map(named) };
  }

  /** A page of the organization's gateway requests, newest first, with how many match. */
  requests(actor: Actor, orgRef: string | null | undefined, filter: RequestFilter, page: { offset: number; limit: number; uncounted?: boolean }): Promise<{ rows: ListedRequest[]; total: number }> {
    return this.c.deps.requests.list(this.c.policy(actor).org(orgRef).id, filter, page);
  }

  /** One logged request of the actor's organization; what a capture kept only for its admins. */
  async request(actor: Actor, id: string): Promise<ListedRequest & { captureVisible: boolean }> {
    const found = await this.c.deps.requests.get(id);
    if (!found) throw new MakinaError("not_found", `No request '${id}' in the request log.`, { param: "id" });
    const policy = this.c.policy(actor);
    policy.see(found.orgId, "request", id, "id");
    return { ...found, captureVisible: policy.isAdmin };
  }

  /** The organization's audit log, to its admins (and the operator), newest first (see {@link AuditEventStore.list}). */
  async audit(actor: Actor, orgRef: string | null | undefined, options: { limit: number; before?: string | { at: number; id: string } } & AuditFilter): Promise<AuditEvent[]> {
    const policy = this.c.policy(actor);
    const org = policy.org(orgRef);
    policy.requireAdmin("read the audit log");
    return this.c.store.audit.list(org.id, options);
  }

  /** The organization's machines and stacks as stored: what forms choose from by name. */
  async fleet(actor: Actor, orgRef: string | null | undefined): Promise<{ machines: Machine[]; stacks: Stack[] }> {
    const orgId = this.c.policy(actor).org(orgRef).id;
    const [machines, stacks] = await Promise.all([this.c.store.machines.listByOrg(orgId), this.c.store.stacks.listByOrg(orgId)]);
    return { machines, stacks };
  }

  /**
   * Whose live events a caller follows: a user its own organization's (one it names must be its own), the
   * operator every organization's (null) or the one it names.
   */
  eventScope(actor: Actor, orgRef: string | null | undefined): string | null {
    const policy = this.c.policy(actor);
    const named = orgRef === undefined || orgRef === null || orgRef === "" ? null : policy.org(orgRef).id;
    return policy.orgScope ?? named;
  }
}
