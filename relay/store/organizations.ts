import type { Db } from "./open-database.js";
import { newId } from "../ids/index.js";

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
}

interface Row {
  id: string;
  name: string;
  slug: string;
  default_key_rpm: number | null;
  default_key_tpm: number | null;
  created_at: number;
}

const toOrg = (r: Row): Organization => ({ id: r.id, name: r.name, slug: r.slug, defaultKeyRpm: r.default_key_rpm, defaultKeyTpm: r.default_key_tpm, createdAt: r.created_at });

/** Turns a display name into a URL-safe slug (`My Team` → `my-team`). */
export function slugify(name: string): string {
  const slug = name.toLowerCase().normalize("NFKD").replace(/[^a-z0-9]+/g, "-").replace(/^-+|-+$/g, "").slice(0, 48);
  return slug || "org";
}

/** Organizations in SQLite. */
export class OrganizationStore {
  constructor(private readonly db: Db) {}

  /** Creates an organization; `null` when the slug is taken. */
  create(name: string, slug = slugify(name), now = Date.now()): Organization | null {
    const org: Organization = { id: newId("org"), name, slug, defaultKeyRpm: null, defaultKeyTpm: null, createdAt: now };
    const res = this.db
      .prepare("INSERT INTO organizations (id, name, slug, created_at) VALUES (?, ?, ?, ?) ON CONFLICT(slug) DO NOTHING")
      .run(org.id, name, slug, now);
    return res.changes === 1 ? org : null;
  }

  /** Finds an organization by id or slug. */
  find(idOrSlug: string): Organization | undefined {
    const row = this.db.prepare("SELECT * FROM organizations WHERE id = ? OR slug = ?").get(idOrSlug, idOrSlug) as Row | undefined;
    return row && toOrg(row);
  }

  /** Sets the limits of the organization's keys that set none of their own. */
  setDefaultKeyLimits(id: string, limits: { rpm: number | null; tpm: number | null }): void {
    this.db.prepare("UPDATE organizations SET default_key_rpm = ?, default_key_tpm = ? WHERE id = ?").run(limits.rpm, limits.tpm, id);
  }

  list(): Organization[] {
    return (this.db.prepare("SELECT * FROM organizations ORDER BY created_at, id").all() as Row[]).map(toOrg);
  }
}
