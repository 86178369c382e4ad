import { MakinaError } from "../../proto/index.js";
import type { Actor } from "../auth/index.js";
import { slugify, type Organization } from "../store/index.js";
import { given, type ControlContext, type Given } from "./control-context.js";
import type { Budget } from "../limits/index.js";

/** The default rate limits of an organization's keys; a limit left out is kept, null clears it. */
export interface OrgKeyDefaults {
  defaultKeyRpm?: number | null;
  defaultKeyTpm?: number | null;
  /** The token budget of all its keys together; null removes it. */
  budget?: Budget | null;
}

/** An organization as the admin API shows it, with what its budget has spent this period. */
export type OrgView = Organization & { budgetSpent: number | null };

/** Organizations: the operator lists and creates them; an organization's admins set its default key limits. */
export class Orgs {
  constructor(private readonly c: ControlContext) {}

  /** The organizations the actor sees: every one for the operator, its own for a user. */
  async list(actor: Actor): Promise<OrgView[]> {
    const policy = this.c.policy(actor);
    return Promise.all((policy.orgScope === null ? await this.c.store.orgs.list() : [await this.get(actor, policy.org(undefined).id)]).map((o) => this.view(o)));
  }

  /** What the organization's budget has spent this period, beside it. */
  async view(org: Organization): Promise<OrgView> {
    const spent = org.budget && this.c.deps.budgetSpent ? await this.c.deps.budgetSpent({ scope: "org", id: org.id, orgId: org.id, ...org.budget }) : null;
    return { ...org, budgetSpent: org.budget ? (spent ?? 0) : null };
  }

  /** The organization with this id or slug, if the actor sees it (a user: its own). */
  async get(actor: Actor, ref: string): Promise<Organization> {
    const org = this.c.policy(actor).org(ref);
    // Read from the database: the directory's copy may lag a write made a moment ago on another relay.
    const stored = await this.c.store.orgs.find(org.id);
    if (!stored) throw new MakinaError("not_found", `No organization '${ref}'.`, { param: "org" });
    return stored;
  }

  /** Makes an organization (the operator only); its slug comes from its name and must be free. */
  async create(actor: Actor, asked: Given<{ name: string }>): Promise<OrgView> {
    this.c.policy(actor).requireOperator("create organizations");
    const { name } = given(asked);
    const org = await this.c.store.orgs.create(name, slugify(name));
    if (!org) throw new MakinaError("conflict", `An organization with the slug '${slugify(name)}' already exists.`, { param: "name" });
    await this.c.record(actor, { orgId: org.id, action: "org.created", target: { kind: "org", id: org.id, name: org.name } });
    return this.view(org);
  }

  /**
   * Sets the rate limits that the organization's keys setting none of their own get (null: none); keys with
   * their own limits keep them. Takes effect from the next request. Admins only.
   */
  async setKeyDefaults(actor: Actor, ref: string, asked: Given<OrgKeyDefaults>): Promise<OrgView> {
    const policy = this.c.policy(actor);
    policy.requireAdmin("change the organization's default key limits");
    const org = policy.org(ref);
    const limits = given(asked);
    await this.c.store.orgs.setDefaultKeyLimits(org.id, { rpm: limits.defaultKeyRpm, tpm: limits.defaultKeyTpm });
    if (limits.budget !== undefined) await this.c.store.orgs.setBudget(org.id, limits.budget);
    this.c.events.emit({ type: "key", orgId: org.id, keyId: "*" });
    const changed = await this.get(actor, org.id);
    await this.c.record(actor, {
      orgId: org.id,
      action: "org.limits_changed",
      target: { kind: "org", id: org.id, name: org.name },
      detail: { default_key_rpm: changed.defaultKeyRpm, default_key_tpm: changed.defaultKeyTpm, budget: changed.budget },
    });
    return this.view(changed);
  }
}
