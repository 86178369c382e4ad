import type { ApiKeyRecord, Stack, Store } from "../store/index.js";

/** Most keys remembered (valid or not) before the directory starts over: random bearer strings cannot grow it without bound. */
const MAX_KEYS = 10_000;
/** Most routes (organization and model) remembered before the directory starts over. */
const MAX_ROUTES = 10_000;
/** Most organizations' model lists remembered before the directory starts over. */
const MAX_CATALOGS = 1_000;

/** What `/v1/models` lists for an organization: its slug, and its deployed stacks with an endpoint. */
export interface ModelCatalog {
  orgSlug: string;
  stacks: Stack[];
}

/**
 * What the gateway reads for every request (a key by its hash, the stacks serving a model) kept in
 * memory, and forgotten whenever the database may have changed: a write through this relay's own
 * connection (SQLite's `total_changes()`), or a commit by any other connection, such as `makina admin
 * --data-dir` in another process (`PRAGMA data_version`). One cheap statement per request tells which, so
 * a revocation, an undeploy or a new limit holds for the very next request.
 */
export class GatewayDirectory {
  private readonly ownChanges;
  private readonly dataVersion;
  private changes = -1;
  private version = -1;
  private readonly keys = new Map<string, ApiKeyRecord | null>();
  private readonly routes = new Map<string, Stack[]>();
  private readonly catalogs = new Map<string, ModelCatalog>();

  constructor(private readonly store: Store) {
    // Two statements: reading the pragma through its table-valued function costs more than both together.
    this.ownChanges = store.db.prepare("SELECT total_changes()").pluck();
    this.dataVersion = store.db.prepare("PRAGMA data_version").pluck();
  }

  /** Forgets everything when the database changed since the last call. Call once per request, before reading. */
  refresh(): void {
    const changes = this.ownChanges.get() as number;
    const version = this.dataVersion.get() as number;
    if (changes === this.changes && version === this.version) return;
    this.changes = changes;
    this.version = version;
    this.keys.clear();
    this.routes.clear();
    this.catalogs.clear();
  }

  /** The key with this hash, if any. */
  findByHash(keyHash: string): ApiKeyRecord | undefined {
    let record = this.keys.get(keyHash);
    if (record === undefined) {
      if (this.keys.size >= MAX_KEYS) this.keys.clear();
      record = this.store.keys.findByHash(keyHash) ?? null;
      // A key that sets no limit of its own takes its organization's default, if it has one.
      if (record && (record.rpm === null || record.tpm === null)) {
        const org = this.store.orgs.find(record.orgId);
        if (org) record = { ...record, rpm: record.rpm ?? org.defaultKeyRpm, tpm: record.tpm ?? org.defaultKeyTpm };
      }
      this.keys.set(keyHash, record);
    }
    return record ?? undefined;
  }

  /** Records a key's use (written with the others within a second). */
  touch(id: string, now?: number): void {
    this.store.keys.touch(id, now);
  }

  /** The organization's deployed stacks with an Endpoint layer, oldest deployment first. */
  catalog(orgId: string): ModelCatalog {
    let catalog = this.catalogs.get(orgId);
    if (!catalog) {
      if (this.catalogs.size >= MAX_CATALOGS) this.catalogs.clear();
      catalog = { orgSlug: this.store.orgs.find(orgId)?.slug ?? "", stacks: this.store.stacks.servingInOrg(orgId) };
      this.catalogs.set(orgId, catalog);
    }
    return catalog;
  }

  /** Deployed stacks with an Endpoint layer serving `modelId` in an organization. */
  servingModel(orgId: string, modelId: string): Stack[] {
    const route = `${orgId}\u0000${modelId}`;
    let stacks = this.routes.get(route);
    if (!stacks) {
      if (this.routes.size >= MAX_ROUTES) this.routes.clear();
      stacks = this.store.stacks.servingModel(orgId, modelId);
      this.routes.set(route, stacks);
    }
    return stacks;
  }
}
