import type { Db } from "./open-database.js";
import type { Row } from "./tables.js";
import type { ChangeNotices } from "./change-notices.js";
import { newId } from "../ids/index.js";
import type { Budget } from "../admin-contract/budgets.js";
import { budgetOf } from "./api-keys.js";

/** An organization: the owner of machines, stacks and keys. */
export interface Organization {
  id: string;
  name: string;
  slug: string;
  /** Requests per minute for the organization's keys that set no limit of their own; null: none. */
  defaultKeyRpm: number | null;
  /** Tokens per minute, likewise. */
  defaultKeyTpm: number | null;
  createdAt: number;
  /** Tokens all its keys together may use per calendar period; null: no budget. */
  budget: Budget | null;
}

const toOrg = (r: Row<"organizations">): Organization => ({
  id: r.id,
  name: r.name,
  slug: r.slug,
  defaultKeyRpm: r.default_key_rpm,
  defaultKeyTpm: r.default_key_tpm,
  createdAt: r.created_at,
  budget: budgetOf(r),
});

/** Turns a display name into a URL-safe slug (`My Team` → `my-team`). */
export function slugify(name: string): string {
  const slug = name.toLowerCase().normalize("NFKD").replace(/[^a-z0-9]+/g, "-").replace(/^-+|-+$/g, "").slice(0, 48);
  return slug || "org";
}

/** Organizations. */
export class OrganizationStore {
  constructor(
    private readonly db: Db,
    private readonly notices: ChangeNotices,
  ) {}

  /** Creates an organization; `null` when the slug is taken. */
  async create(name: string, slug = slugify(name), now = Date.now()): Promise<Organization | null> {
    const org: Organization = { id: newId("org"), name, slug, defaultKeyRpm: null, defaultKeyTpm: null, createdAt: now, budget: null };
    const res = await this.db
      .insertInto("organizations")
      .values({ id: org.id, name, slug, created_at: now })
      .onConflict((oc) => oc.column("slug").doNothing())
      .executeTakeFirst();
    if (Number(res.numInsertedOrUpdatedRows ?? 0) !== 1) return null;
    await this.notices.changed({ kind: "org", orgId: org.id });
    return org;
  }

  /** Finds an organization by id or slug. */
  async find(idOrSlug: string): Promise<Organization | undefined> {
    const row = await this.db
      .selectFrom("organizations")
      .selectAll()
      .where((eb) => eb.or([eb("id", "=", idOrSlug), eb("slug", "=", idOrSlug)]))
      .executeTakeFirst();
    return row && toOrg(row);
  }

  /**
   * Sets the limits of the organization's keys that set none of their own; a limit left undefined is kept as
   * it is in the database (so two changes at once, one to each, both hold).
   */
  async setDefaultKeyLimits(id: string, limits: { rpm?: number | null; tpm?: number | null }): Promise<void> {
    const set = { ...(limits.rpm !== undefined ? { default_key_rpm: limits.rpm } : {}), ...(limits.tpm !== undefined ? { default_key_tpm: limits.tpm } : {}) };
    if (Object.keys(set).length === 0) return;
    // Announced also when the answer was lost after the commit: the directory reads the organization back.
    await this.notices.after({ kind: "org", orgId: id }, () => this.db.updateTable("organizations").set(set).where("id", "=", id).execute());
  }

  /** Sets (or, with null, removes) the token budget of all the organization's keys together. */
  async setBudget(id: string, budget: Budget | null): Promise<void> {
    const set = { budget_tokens: budget?.tokens ?? null, budget_period: budget?.period ?? null };
    await this.notices.after({ kind: "org", orgId: id }, () => this.db.updateTable("organizations").set(set).where("id", "=", id).execute());
  }

  async list(): Promise<Organization[]> {
    return (await this.db.selectFrom("organizations").selectAll().orderBy("created_at").orderBy("id").execute()).map(toOrg);
  }
}
