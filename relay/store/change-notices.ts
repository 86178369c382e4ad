/**
 * A change to what relays hold in memory: a key (created, revoked, its limits), an organization (its default
 * key limits), the stacks of an organization (deployed, taken out of service), what the gateway reads on every
 * request; a machine's token (rotated, revoked), which ends its link on whichever relay holds it; a user (disabled,
 * re-roled, given a new password, deleted), whose keys the gateway drops and whose event streams end; or a setting
 * (the admin token's hash, which every relay accepts). The store
 * announces each one after its write committed.
 */
export type StoreChange =
  | { kind: "key"; keyId: string }
  | { kind: "org"; orgId: string }
  | { kind: "stacks"; orgId: string }
  | { kind: "machine"; machineId: string }
  | { kind: "user"; userId: string }
  | { kind: "setting"; key: string };

/**
 * Called with each change; the write that made it answers only once every listener is done. `failure`: the
 * write threw (its change is announced all the same: it may have committed before its answer was lost).
 */
export type ChangeListener = (change: StoreChange, failure?: unknown) => Promise<void> | void;

/**
 * Where the store announces its changes. A write awaits its listeners, so whoever reads state from memory
 * (the gateway's directory, and the relays that must hear of it) has applied the change before the admin
 * API answers: the next request sees it.
 */
export class ChangeNotices {
  private readonly listeners = new Set<ChangeListener>();

  /** Adds a listener; returns what removes it. */
  listen(listener: ChangeListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async changed(change: StoreChange, failure?: unknown): Promise<void> {
    if (this.listeners.size === 0) return;
    await Promise.all([...this.listeners].map((l) => l(change, failure)));
  }

  /** Runs a write and announces `change` after it, also when it threw (with what it threw). */
  async after<T>(change: StoreChange, write: () => Promise<T>): Promise<T> {
    let failure: unknown;
    try {
      return await write();
    } catch (err) {
      failure = err;
      throw err;
    } finally {
      await this.changed(change, failure);
    }
  }
}
