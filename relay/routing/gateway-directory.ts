import { MakinaError, type Logger } from "../../proto/index.js";
import { storageError } from "../health/index.js";
import type { RefusedKey } from "../keys/index.js";
import type { ApiKeyRecord, Organization, Stack, Store, StoreChange } from "../store/index.js";
import { RoutePatterns } from "./routed-model.js";
import { effectiveKey } from "./effective-key.js";

/** What `/v1/models` lists for an organization: its slug, and its deployed stacks with an endpoint. */
export interface ModelCatalog {
  orgSlug: string;
  stacks: Stack[];
}

/** The refusal of a relay that may have missed changes made through other relays. */
const behind = () =>
  new MakinaError(
    "storage_unavailable",
    "This relay has lost touch with its database's change feed and may have missed changes made through other relays; it serves again once it has caught up. Try again, or through another relay.",
    { retryAfterMs: 1000 },
  );

/** The setting that holds the admin token's hash. */
export const ADMIN_TOKEN_HASH = "admin_token_hash";

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
  /** The hash of the deployment's admin token (a setting). */
  adminTokenHash: string | undefined;
  /** Users an admin disabled: the keys they made are held (in `keys`) but not served (not in `byHash`). */
  disabledUsers: Set<string>;
  /**
   * Keys known but refused, by hash: revoked within REFUSED_KEEP_MS, or made by a disabled user. Never served: held so
   * that their requests are logged and counted as theirs (who still uses a revoked key is what its admin needs to see).
   */
  refused: Map<string, RefusedKey>;
}

/** How long a revoked key's requests are still logged as its own (after that, as any unknown key's: not at all). */
const REFUSED_KEEP_MS = 30 * 24 * 3_600_000;

const routeOf = (orgId: string, modelId: string) => `${orgId}\u0000${modelId}`;

/**
 * Everything the gateway reads for a request (a key by its hash, the stacks serving a model, an
 * organization's models, and the admin token's hash the admin API checks), held in memory whole, so no request waits on the database: on PostgreSQL a
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
  private state: State = { orgs: new Map(), keys: new Map(), byHash: new Map(), serving: new Map(), routes: new Map(), adminTokenHash: undefined, disabledUsers: new Set(), refused: new Map() };
  private externalVersion = -1;
  /** The reload another process's commit started, until it is done: every request meanwhile waits for it. */
  private reloading: Promise<void> | undefined;
  /** Loads and changes, one at a time, in the order they came. */
  private queue: Promise<void> = Promise.resolve();
  private retry: NodeJS.Timeout | undefined;
  private unlisten: (() => void) | undefined;
  /**
   * Set when the directory may lack a change another writer made (a change it could not read, the change feed's
   * connection lost); cleared by a whole load that succeeded.
   */
  private missed = false;
  /** The router rules' patterns of the stacks held, compiled once each. */
  readonly routePatterns: RoutePatterns;
  /** Reloads of an organization's stacks queued and not started yet, by organization. */
  private readonly stacksQueued = new Map<string, Promise<void>>();
  /**
   * On a database several relays share: until when (`performance.now()`) this relay may serve from memory
   * without hearing from the change feed (see relay/cluster/change-feed.ts). Undefined: no lease to keep.
   */
  private leaseUntil: number | undefined;

  private constructor(
    private readonly store: Store,
    private readonly log?: Logger,
  ) {
    this.routePatterns = new RoutePatterns(log);
  }

  /** Loads the whole directory and keeps it current from then on. */
  static async open(store: Store, log?: Logger): Promise<GatewayDirectory> {
    const directory = new GatewayDirectory(store, log);
    directory.externalVersion = store.externalVersion?.() ?? -1;
    // Listening first: a change announced while the load runs is applied after it.
    directory.unlisten = store.notices.listen((change) => directory.follow(change));
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
   * from what may be stale. On a database several relays share, a relay whose lease on the change feed ran out
   * rejects the same way until it has caught up. Undefined (nothing to wait for) otherwise.
   */
  refresh(): Promise<void> | undefined {
    if (!this.leaseHeld) return Promise.reject(behind());
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

  /** The hash of the admin token every relay on the database accepts (none: no admin token is accepted). */
  get adminTokenHash(): string | undefined {
    return this.state.adminTokenHash;
  }

  /** The active key with this hash, if any. */
  findByHash(keyHash: string): ApiKeyRecord | undefined {
    return this.state.byHash.get(keyHash);
  }

  /** A key that exists but is refused (revoked lately, or its maker disabled), by hash, with why. */
  findRefused(keyHash: string): RefusedKey | undefined {
    const refused = this.state.refused.get(keyHash);
    // Revoked longer ago than the directory keeps them (a relay up for weeks): as any unknown key.
    if (refused?.why === "revoked" && (refused.record.revokedAt ?? 0) < Date.now() - REFUSED_KEEP_MS) return undefined;
    return refused;
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

  /**
   * Applies a change another writer made (announced by the change feed), after those before it. A change to an
   * organization's stacks whose reload is queued and not started yet shares it: that reload reads the stacks
   * after both changes (a deployment moving through its states announces several at once).
   */
  follow(change: StoreChange): Promise<void> {
    if (change.kind !== "stacks") return this.enqueue(() => this.apply(change));
    const queued = this.stacksQueued.get(change.orgId);
    if (queued) return queued;
    const reload = this.enqueue(() => {
      this.stacksQueued.delete(change.orgId);
      return this.apply(change);
    });
    this.stacksQueued.set(change.orgId, reload);
    return reload;
  }

  /**
   * Runs `task` once every change and load queued before it is done, telling it whether the directory is
   * current: nothing missed since the last whole load.
   */
  afterQueued(task: (current: boolean) => void | Promise<void>): Promise<void> {
    return this.enqueue(async () => task(!this.missed));
  }

  /** Marks the directory as possibly missing changes (the change feed lost its connection) until a whole load. */
  markMissed(): void {
    this.missed = true;
  }

  /** Loads everything again, after the changes queued before; resolves with whether it could. */
  reloadWhole(): Promise<boolean> {
    return this.enqueue(() => this.reloadAll()).then(() => !this.missed);
  }

  /** Lets this relay serve from memory until `until` (`performance.now()`), or longer if it already may. */
  holdLeaseUntil(until: number): void {
    this.leaseUntil = Math.max(this.leaseUntil ?? 0, until);
  }

  /** Ends the lease: nothing more is served from memory (a relay leaving its database's relays). */
  dropLease(): void {
    this.leaseUntil = 0;
  }

  /** Whether nothing was missed since the last whole load. */
  get current(): boolean {
    return !this.missed;
  }

  /** Whether the relay serves from memory it knows is current (always, without a lease to keep). */
  /** Whether any organization or active key has a token budget (for `/health`: budgets per relay are worth saying). */
  get budgeted(): boolean {
    for (const org of this.state.orgs.values()) if (org.budget) return true;
    for (const key of this.state.keys.values()) if (key.budget) return true;
    return false;
  }

  get leaseHeld(): boolean {
    return this.leaseUntil === undefined || performance.now() <= this.leaseUntil;
  }

  private enqueue<T>(task: () => Promise<T>): Promise<T> {
    const run = this.queue.then(task);
    this.queue = run.then(
      () => undefined,
      () => undefined,
    );
    return run;
  }

  private async loadAll(): Promise<State> {
    const [orgs, keys, revoked, serving, adminTokenHash, disabledUsers] = await Promise.all([
      this.store.orgs.list(),
      this.store.keys.listActive(),
      this.store.keys.listRevokedSince(Date.now() - REFUSED_KEEP_MS),
      this.store.stacks.serving(),
      this.store.settings.get(ADMIN_TOKEN_HASH),
      this.store.users.disabledIds(),
    ]);
    const state: State = {
      orgs: new Map(orgs.map((o) => [o.id, o])),
      keys: new Map(),
      byHash: new Map(),
      serving: new Map(),
      routes: new Map(),
      adminTokenHash,
      disabledUsers: new Set(disabledUsers),
      refused: new Map(),
    };
    for (const key of revoked) this.refuse(state, key, "revoked");
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
      this.missed = false;
      clearTimeout(this.retry);
      this.retry = undefined;
    } catch (err) {
      this.missed = true;
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
        else if (key?.state === "revoked") this.refuse(state, key, "revoked");
      } else if (change.kind === "org") {
        const org = await this.store.orgs.find(change.orgId);
        if (org) state.orgs.set(org.id, org);
        else state.orgs.delete(change.orgId);
        for (const key of state.keys.values()) if (key.orgId === change.orgId) this.putKey(state, key);
      } else if (change.kind === "stacks") {
        const stacks = await this.store.stacks.serving(change.orgId);
        for (const stack of state.serving.get(change.orgId) ?? []) state.routes.delete(routeOf(stack.orgId, stack.modelId));
        state.serving.set(change.orgId, stacks);
        this.indexRoutes(state, change.orgId);
      } else if (change.kind === "user") {
        // A user deleted stays here: a key it made in its last moments is never served (the next whole load
        // leaves out the keys of users that are gone).
        const user = await this.store.users.get(change.userId);
        if (!user || user.disabledAt !== null) state.disabledUsers.add(change.userId);
        else state.disabledUsers.delete(change.userId);
        for (const key of state.keys.values()) if (key.createdBy === change.userId) this.putKey(state, key);
      } else if (change.kind === "setting" && change.key === ADMIN_TOKEN_HASH) {
        state.adminTokenHash = undefined;
        state.adminTokenHash = await this.store.settings.get(ADMIN_TOKEN_HASH);
      }
    } catch (err) {
      // Fail closed for keys (a revoked key must not stay), and reload everything once the database answers.
      if (change.kind === "key") this.dropKey(state, change.keyId);
      if (change.kind === "user") {
        // Its keys stop until the reload says whether the user is still enabled.
        state.disabledUsers.add(change.userId);
        for (const key of state.keys.values()) if (key.createdBy === change.userId) this.putKey(state, key);
      }
      this.missed = true;
      this.scheduleRetry(err);
    }
  }

  /**
   * Adds (or replaces) an active key, filling in its organization's default limits where it sets none; a key
   * made by a disabled user is held but not served.
   */
  private putKey(state: State, key: ApiKeyRecord): void {
    state.keys.set(key.id, key);
    if (key.createdBy !== null && state.disabledUsers.has(key.createdBy)) {
      for (const hash of [key.keyHash, key.oldKeyHash]) if (hash) state.byHash.delete(hash);
      this.refuse(state, key, "maker_disabled");
      return;
    }
    for (const hash of [key.keyHash, key.oldKeyHash]) if (hash) state.refused.delete(hash);
    const effective = effectiveKey(key, state.orgs.get(key.orgId));
    state.byHash.set(key.keyHash, effective);
    // A regenerated key's old secret names it too (the gateway refuses it once its time is up, saying why), for
    // as long as a revoked key's is known.
    if (key.oldKeyHash && (key.oldSecretUntil ?? 0) >= Date.now() - REFUSED_KEEP_MS) state.byHash.set(key.oldKeyHash, effective);
  }

  /** Holds a key that is never served, by its secret's hash and its old one's: its requests are its own. */
  private refuse(state: State, key: ApiKeyRecord, why: RefusedKey["why"]): void {
    state.refused.set(key.keyHash, { record: key, why });
    if (key.oldKeyHash) state.refused.set(key.oldKeyHash, { record: key, why });
  }

  /** Forgets a hash a key no longer has. */
  private forget(state: State, hash: string): void {
    state.byHash.delete(hash);
    state.refused.delete(hash);
  }

  private dropKey(state: State, keyId: string): void {
    const old = state.keys.get(keyId);
    if (!old) return;
    state.keys.delete(keyId);
    for (const hash of [old.keyHash, old.oldKeyHash]) if (hash) this.forget(state, hash);
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
