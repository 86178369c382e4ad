import type { Logger } from "../../proto/index.js";
import { storageError } from "../health/index.js";
import type { ApiKeyRecord, Organization, Stack, Store, StoreChange } from "../store/index.js";

/** What `/v1/models` lists for an organization: its slug, and its deployed stacks with an endpoint. */
export interface ModelCatalog {
  orgSlug: string;
  stacks: Stack[];
}

/** How long after a failed reload (the database unreachable) the directory tries again. */
const RETRY_MS = 1000;

/** The directory's state, swapped whole by a full load. */
interface State {
  orgs: Map<string, Organization>;
  /** Active keys as stored, by id. */
  keys: Map<string, ApiKeyRecord>;
  /** Active keys by hash, each with its organization's default limits filled in where it sets none. */
  byHash: Map<string, ApiKeyRecord>;
  /** Each organization's deployed stacks with an Endpoint layer, oldest deployment first. */
  serving: Map<string, Stack[]>;
  /** The same stacks by organization and model id. */
  routes: Map<string, Stack[]>;
}

const routeOf = (orgId: string, modelId: string) => `${orgId}\u0000${modelId}`;

/**
 * Everything the gateway reads for a request (a key by its hash, the stacks serving a model, an
 * organization's models), held in memory whole, so no request waits on the database: on PostgreSQL a
 * round trip never sits between a client and its first token, and an unknown bearer string costs a map
 * lookup. It is loaded at start and kept current by the store's change notices, applied before the write
 * that made them returns (so a revocation, an undeploy or a new limit holds for the very next request); on
 * SQLite, a commit by another process (`makina admin --data-dir`, an operator's tool) is seen through
 * `PRAGMA data_version`, one cheap read per request, and reloads everything before that request goes on.
 *
 * When a reload fails (the database unreachable) a changed key is dropped rather than kept as it was, so
 * a key is never served after its revocation; the directory reloads whole once the database answers.
 */
export class GatewayDirectory {
  private state: State = { orgs: new Map(), keys: new Map(), byHash: new Map(), serving: new Map(), routes: new Map() };
  private externalVersion = -1;
  /** The reload another process's commit started, until it is done: every request meanwhile waits for it. */
  private reloading: Promise<void> | undefined;
  /** Loads and changes, one at a time, in the order they came. */
  private queue: Promise<void> = Promise.resolve();
  private retry: NodeJS.Timeout | undefined;
  private unlisten: (() => void) | undefined;

  private constructor(
    private readonly store: Store,
    private readonly log?: Logger,
  ) {}

  /** Loads the whole directory and keeps it current from then on. */
  static async open(store: Store, log?: Logger): Promise<GatewayDirectory> {
    const directory = new GatewayDirectory(store, log);
    directory.externalVersion = store.externalVersion?.() ?? -1;
    // Listening first: a change announced while the load runs is applied after it.
    directory.unlisten = store.notices.listen((change) => directory.enqueue(() => directory.apply(change)));
    try {
      await directory.enqueue(async () => {
        directory.state = await directory.loadAll();
      });
    } catch (err) {
      directory.close();
      throw err;
    }
    return directory;
  }

  /** Stops following changes. */
  close(): void {
    this.unlisten?.();
    clearTimeout(this.retry);
  }

  /**
   * Call once per request, before reading: on SQLite, when another process committed since, the returned
   * promise settles once everything is reloaded (every request meanwhile gets the same promise). A reload
   * that fails rejects with 503 `storage_unavailable`, and the next request tries again: nothing is served
   * from what may be stale. Undefined (nothing to wait for) otherwise.
   */
  refresh(): Promise<void> | undefined {
    const version = this.store.externalVersion?.();
    if (version === undefined || version === this.externalVersion) return this.reloading;
    const previous = this.externalVersion;
    this.externalVersion = version;
    const reload = this.enqueue(async () => {
      try {
        this.state = await this.loadAll();
      } catch (err) {
        this.externalVersion = previous;
        throw storageError(err) ?? err;
      }
    });
    this.reloading = reload;
    const done = () => {
      if (this.reloading === reload) this.reloading = undefined;
    };
    reload.then(done, done);
    return reload;
  }

  /** The organization with this id or slug, if any. */
  findOrg(idOrSlug: string): Organization | undefined {
    const byId = this.state.orgs.get(idOrSlug);
    if (byId) return byId;
    for (const org of this.state.orgs.values()) if (org.slug === idOrSlug) return org;
    return undefined;
  }

  /** The active key with this hash, if any. */
  findByHash(keyHash: string): ApiKeyRecord | undefined {
    return this.state.byHash.get(keyHash);
  }

  /** Records a key's use (written with the others within a second). */
  touch(id: string, now?: number): void {
    this.store.keys.touch(id, now);
  }

  /** The organization's deployed stacks with an Endpoint layer, oldest deployment first. */
  catalog(orgId: string): ModelCatalog {
    return { orgSlug: this.state.orgs.get(orgId)?.slug ?? "", stacks: this.state.serving.get(orgId) ?? [] };
  }

  /** Deployed stacks with an Endpoint layer serving `modelId` in an organization. */
  servingModel(orgId: string, modelId: string): Stack[] {
    return this.state.routes.get(routeOf(orgId, modelId)) ?? [];
  }

  private enqueue(task: () => Promise<void>): Promise<void> {
    const run = this.queue.then(task);
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async loadAll(): Promise<State> {
    const [orgs, keys, serving] = await Promise.all([this.store.orgs.list(), this.store.keys.listActive(), this.store.stacks.serving()]);
    const state: State = { orgs: new Map(orgs.map((o) => [o.id, o])), keys: new Map(), byHash: new Map(), serving: new Map(), routes: new Map() };
    for (const key of keys) this.putKey(state, key);
    for (const stack of serving) {
      const list = state.serving.get(stack.orgId);
      if (list) list.push(stack);
      else state.serving.set(stack.orgId, [stack]);
    }
    for (const orgId of state.serving.keys()) this.indexRoutes(state, orgId);
    return state;
  }

  private async reloadAll(): Promise<void> {
    try {
      this.state = await this.loadAll();
      clearTimeout(this.retry);
      this.retry = undefined;
    } catch (err) {
      this.scheduleRetry(err);
    }
  }

  private scheduleRetry(err: unknown): void {
    this.log?.warn("the gateway's directory could not be read from the database; trying again", { error: String(err) });
    clearTimeout(this.retry);
    this.retry = setTimeout(() => void this.enqueue(() => this.reloadAll()), RETRY_MS);
    this.retry.unref();
  }

  private async apply(change: StoreChange): Promise<void> {
    const state = this.state;
    try {
      if (change.kind === "key") {
        this.dropKey(state, change.keyId);
        const key = await this.store.keys.findById(change.keyId);
        if (key?.state === "active") this.putKey(state, key);
      } else if (change.kind === "org") {
        const org = await this.store.orgs.find(change.orgId);
        if (org) state.orgs.set(org.id, org);
        else state.orgs.delete(change.orgId);
        for (const key of state.keys.values()) if (key.orgId === change.orgId) this.putKey(state, key);
      } else {
        const stacks = await this.store.stacks.serving(change.orgId);
        for (const stack of state.serving.get(change.orgId) ?? []) state.routes.delete(routeOf(stack.orgId, stack.modelId));
        state.serving.set(change.orgId, stacks);
        this.indexRoutes(state, change.orgId);
      }
    } catch (err) {
      // Fail closed for keys (a revoked key must not stay), and reload everything once the database answers.
      if (change.kind === "key") this.dropKey(state, change.keyId);
      this.scheduleRetry(err);
    }
  }

  /** Adds (or replaces) an active key, filling in its organization's default limits where it sets none. */
  private putKey(state: State, key: ApiKeyRecord): void {
    state.keys.set(key.id, key);
    let effective = key;
    if (key.rpm === null || key.tpm === null) {
      const org = state.orgs.get(key.orgId);
      if (org) effective = { ...key, rpm: key.rpm ?? org.defaultKeyRpm, tpm: key.tpm ?? org.defaultKeyTpm };
    }
    state.byHash.set(key.keyHash, effective);
  }

  private dropKey(state: State, keyId: string): void {
    const old = state.keys.get(keyId);
    if (!old) return;
    state.keys.delete(keyId);
    state.byHash.delete(old.keyHash);
  }

  private indexRoutes(state: State, orgId: string): void {
    for (const stack of state.serving.get(orgId) ?? []) {
      const route = routeOf(orgId, stack.modelId);
      const list = state.routes.get(route);
      if (list) list.push(stack);
      else state.routes.set(route, [stack]);
    }
  }
}
