import { MakinaError, type ServiceTier } from "../../proto/index.js";
import type { Actor } from "../auth/index.js";
import { createApiKey, publicKey, regenerateApiKey, type NewApiKey, type PublicApiKey } from "../keys/index.js";
import type { ApiKeyChanges, KeyPageAsk, Organization } from "../store/index.js";
import { given, type ControlContext, type Given } from "./control-context.js";

/** A key as the admin API shows it: `blocked` while blocked, `expired` once past its expiry (both still `active` in the store). */
export type KeyView = Omit<PublicApiKey, "state" | "budgets"> & { state: "active" | "revoked" | "blocked" | "expired"; budgetSpent: number | null };

/** What a key is made with, or changed by: a new key's options but its organization and maker (the caller's). */
export type KeyInput = Omit<NewApiKey, "orgId" | "createdBy">;

/** What a page of keys asks: searched, filtered and sorted by the database. */
export type KeyPageQuery = Omit<KeyPageAsk, "now" | "usageSince">;

const target = (k: { id: string; name: string | null; prefix: string }) => ({ kind: "key", id: k.id, name: k.name ?? k.prefix });

/** API keys: anyone of the organization lists and makes them; admins revoke and change any, members their own. */
export class Keys {
  constructor(private readonly c: ControlContext) {}

  /** One page of the organization's keys, each with what it served in the last 24 hours (as recorded so far). */
  async page(actor: Actor, orgRef: string | null | undefined, ask: KeyPageQuery): Promise<{ keys: (KeyView & { requests: number; tokens: number })[]; total: number }> {
    const org = this.c.policy(actor).org(orgRef);
    await this.c.deps.usage.flush();
    const now = Date.now();
    const usageSince = Math.floor((now - 86_400_000) / 60_000) * 60_000;
    const { keys, total } = await this.c.store.keys.page(org.id, { ...ask, now, usageSince });
    const views = await Promise.all(keys.map((k) => this.view(k, now)));
    return { keys: views.map((v, i) => ({ ...v, requests: keys[i]!.requests, tokens: keys[i]!.tokens })), total };
  }

  /** Every key of the organization, oldest first (never their secrets or hashes). */
  async list(actor: Actor, orgRef: string | null | undefined): Promise<KeyView[]> {
    const now = Date.now();
    return Promise.all((await this.c.store.keys.listByOrg(this.c.policy(actor).org(orgRef).id)).map((k) => this.view(k, now)));
  }

  /** The key `id` (never its secret or hash), if the actor sees it. */
  async get(actor: Actor, id: string): Promise<KeyView> {
    const key = await this.find(id);
    this.c.policy(actor).see(key.orgId, "API key", id, "key");
    return this.view(key, Date.now());
  }

  /** A key as the admin API shows it, with what its budget has spent this period. */
  private async view(key: PublicApiKey, now: number): Promise<KeyView> {
    const { budgets: _lines, ...shown } = onWire(key, now);
    const spent = key.budget && this.c.deps.budgetSpent ? await this.c.deps.budgetSpent({ scope: "key", id: key.id, orgId: key.orgId, ...key.budget }) : null;
    return { ...shown, budgetSpent: key.budget ? (spent ?? 0) : null };
  }

  /**
   * Makes a key of the organization; its stacks and machines must be the organization's, its expiry to come, and a
   * member's limits within the organization's defaults. The secret is returned this once.
   */
  async create(actor: Actor, orgRef: string | null | undefined, input: KeyInput): Promise<{ key: string; record: KeyView }> {
    const policy = this.c.policy(actor);
    const org = policy.org(orgRef);
    if (!policy.isAdmin) withinOrgDefaults(input, org);
    if (!policy.isAdmin && input.budget) throw budgetsAreAdmins();
    const options = {
      budget: input.budget ?? null,
      serviceTier: input.serviceTier ?? "default",
      name: input.name ?? null,
      stackIds: input.stackIds ?? null,
      machineIds: input.machineIds ?? null,
      rpm: input.rpm ?? null,
      tpm: input.tpm ?? null,
      createdBy: policy.userId,
      expiresAt: inFuture(input.expiresAt),
    };
    await this.checkTargets(org.id, options);
    const cap = this.c.deps.caps.keysPerPerson;
    if (policy.userId !== null && (await this.c.store.keys.countActiveBy(policy.userId)) >= cap) {
      throw new MakinaError("conflict", `You have ${cap} keys, the most one person may have on this relay (MAKINA_MAX_KEYS_PER_PERSON): revoke one you no longer use first.`);
    }
    const created = await createApiKey(this.c.store, { ...options, orgId: org.id });
    this.c.events.emit({ type: "key", orgId: org.id, keyId: created.record.id });
    const r = created.record;
    await this.c.record(actor, { orgId: org.id, action: "key.created", target: target(r), detail: { rpm: r.rpm, tpm: r.tpm, stacks: r.stackIds, machines: r.machineIds, expires_at: r.expiresAt, service_tier: r.serviceTier, budget: r.budget } });
    return { key: created.key, record: await this.view(r, Date.now()) };
  }

  /**
   * Changes a key's name, restrictions, limits or expiry (admins any key, members their own): what `edit` names
   * changes, and only what differs from the key as it is is changed and recorded. Holds on every relay from the
   * next request. A revoked key cannot change (`conflict`).
   */
  async update(actor: Actor, id: string, input: Given<KeyInput>): Promise<KeyView> {
    const policy = this.c.policy(actor);
    const key = await this.find(id);
    policy.see(key.orgId, "API key", id, "key");
    const org = policy.org(key.orgId);
    if (!policy.isAdmin && key.createdBy !== policy.userId) throw new MakinaError("permission_denied", "Members can change only the keys they created.");
    const edit = given(input);
    // A key an admin gave the priority tier keeps it when its member edits the rest.
    if (!policy.isAdmin) withinOrgDefaults({ ...edit, serviceTier: edit.serviceTier === key.serviceTier ? undefined : edit.serviceTier }, org);
    const asked: ApiKeyChanges = {
      ...(edit.name !== undefined && { name: edit.name }),
      ...(edit.stackIds !== undefined && { stackIds: edit.stackIds?.length ? edit.stackIds : null }),
      ...(edit.machineIds !== undefined && { machineIds: edit.machineIds?.length ? edit.machineIds : null }),
      ...(edit.rpm !== undefined && { rpm: edit.rpm }),
      ...(edit.tpm !== undefined && { tpm: edit.tpm }),
      ...(edit.serviceTier !== undefined && edit.serviceTier !== null && { serviceTier: edit.serviceTier }),
      ...(edit.budget !== undefined && { budget: edit.budget }),
      // The expiry it has already may be past: sent back as it is, it is no change, not a refusal.
      ...(edit.expiresAt !== undefined && { expiresAt: edit.expiresAt === key.expiresAt ? key.expiresAt : inFuture(edit.expiresAt) }),
    };
    // A form sends every field; only what differs from the key as it is changes, and is recorded.
    const changes = Object.fromEntries(Object.entries(asked).filter(([field, value]) => JSON.stringify(value) !== JSON.stringify(key[field as keyof ApiKeyChanges]))) as ApiKeyChanges;
    if (key.state !== "active") throw new MakinaError("conflict", "This key is revoked: it cannot change. Make a new one.");
    // A budget an admin set holds against its member: only admins set, change or remove one.
    if (!policy.isAdmin && changes.budget !== undefined) throw budgetsAreAdmins();
    await this.checkTargets(key.orgId, changes);
    const updated = await this.c.store.keys.update(id, changes);
    if (!updated) throw new MakinaError("not_found", `No API key '${id}'.`, { param: "key" });
    this.c.events.emit({ type: "key", orgId: updated.orgId, keyId: updated.id });
    if (Object.keys(changes).length > 0) {
      await this.c.record(actor, { orgId: key.orgId, action: "key.changed", target: target(updated), detail: wireNames(changes) });
    }
    return this.view(updated, Date.now());
  }

  /** Revokes a key (admins any, members the keys they made): refused from the next request on, on every relay. */
  async revoke(actor: Actor, id: string): Promise<KeyView> {
    const policy = this.c.policy(actor);
    const key = await this.find(id);
    policy.see(key.orgId, "API key", id, "key");
    if (!policy.isAdmin && key.createdBy !== policy.userId) throw new MakinaError("permission_denied", "Members can revoke only the keys they created.");
    const revoked = await this.c.store.keys.revoke(id);
    if (!revoked) throw new MakinaError("not_found", `No API key '${id}'.`, { param: "key" });
    this.c.events.emit({ type: "key", orgId: revoked.orgId, keyId: revoked.id });
    await this.c.record(actor, { orgId: key.orgId, action: "key.revoked", target: target(revoked) });
    return this.view(revoked, Date.now());
  }

  /**
   * Blocks a key, or unblocks it (admins): refused from its next request on, on every relay, its holder told
   * why and its requests logged as its own, until unblocked. A revoked key cannot be either.
   */
  async setBlocked(actor: Actor, id: string, blocked: boolean): Promise<KeyView> {
    const policy = this.c.policy(actor);
    const key = await this.find(id);
    policy.see(key.orgId, "API key", id, "key");
    policy.requireAdmin(blocked ? "block a key" : "unblock a key");
    if (key.state !== "active") throw new MakinaError("conflict", "This key is revoked: it cannot be blocked or unblocked.");
    const changed = (key.blockedAt !== null) !== blocked;
    const updated = await this.c.store.keys.setBlocked(id, blocked);
    if (!updated) throw new MakinaError("not_found", `No API key '${id}'.`, { param: "key" });
    if (changed) {
      this.c.events.emit({ type: "key", orgId: updated.orgId, keyId: updated.id });
      await this.c.record(actor, { orgId: key.orgId, action: blocked ? "key.blocked" : "key.unblocked", target: target(updated) });
    }
    return this.view(updated, Date.now());
  }

  /**
   * Gives a key a new secret (admins any, members the keys they made), the old one working `graceS` seconds more
   * (at most a day); audited with the grace. Its restrictions, limits and use stay.
   */
  async regenerate(actor: Actor, id: string, graceS: number): Promise<{ key: string; record: KeyView }> {
    const policy = this.c.policy(actor);
    const key = await this.find(id);
    policy.see(key.orgId, "API key", id, "key");
    if (!policy.isAdmin && key.createdBy !== policy.userId) throw new MakinaError("permission_denied", "Members can regenerate only the keys they created.");
    if (key.state !== "active") throw new MakinaError("conflict", "This key is revoked: it cannot be given a new secret. Make a new key.");
    const made = await regenerateApiKey(this.c.store, id, graceS * 1000);
    if (!made) throw new MakinaError("conflict", "This key was revoked meanwhile: it cannot be given a new secret.");
    this.c.events.emit({ type: "key", orgId: made.record.orgId, keyId: id });
    await this.c.record(actor, { orgId: key.orgId, action: "key.regenerated", target: target(made.record), detail: { grace_s: graceS, old_secret_stops_at: made.record.oldSecretUntil } });
    return { key: made.key, record: await this.view(made.record, Date.now()) };
  }

  private async find(id: string): Promise<PublicApiKey> {
    const key = await this.c.store.keys.get(id);
    if (!key) throw new MakinaError("not_found", `No API key '${id}'.`, { param: "key" });
    return publicKey(key);
  }

  /** The stacks and machines a key is restricted to must be its organization's. */
  private async checkTargets(orgId: string, restricted: { stackIds?: string[] | null; machineIds?: string[] | null }): Promise<void> {
    for (const s of restricted.stackIds ?? []) {
      const stack = await this.c.store.stacks.get(s);
      if (!stack || stack.orgId !== orgId) throw new MakinaError("not_found", `No stack '${s}' in this organization.`, { param: "stacks" });
    }
    for (const m of restricted.machineIds ?? []) await this.c.machine(orgId, m);
  }
}

/** A key as shown: `blocked` while blocked, `expired` once past its expiry. */
function onWire<K extends PublicApiKey>(key: K, now: number): Omit<K, "state"> & { state: "active" | "revoked" | "blocked" | "expired" } {
  if (key.state !== "active") return key;
  return { ...key, state: key.blockedAt !== null ? "blocked" : key.expiresAt !== null && now >= key.expiresAt ? "expired" : "active" };
}

/** An expiry must be to come: a key that should stop now is revoked instead. */
function inFuture(at: number | null | undefined): number | null {
  if (at === undefined || at === null) return null;
  if (at <= Date.now()) throw new MakinaError("invalid_value", "'expires_at' must be in the future; to stop a key now, revoke it.", { param: "expires_at" });
  return at;
}

/** A key's changes in the admin API's words, for the audit log. */
function wireNames(changes: ApiKeyChanges): Record<string, unknown> {
  const names: Record<string, string> = { name: "name", stackIds: "stack_ids", machineIds: "machine_ids", rpm: "rpm", tpm: "tpm", expiresAt: "expires_at", serviceTier: "service_tier", budget: "budget" };
  return Object.fromEntries(Object.entries(changes).map(([field, value]) => [names[field] ?? field, value]));
}

/** 403: a member asked to set or change a key's token budget. */
function budgetsAreAdmins(): MakinaError {
  return new MakinaError("permission_denied", "Only an admin can set, change or remove a key's token budget.", { param: "budget" });
}

/**
 * A member's key allows no more than the organization's default limits (where it has them), and no more than the
 * `default` service tier: a member cannot give itself more than an admin set for everyone. Left unset, a limit is
 * the default.
 */
function withinOrgDefaults(input: { rpm?: number | null; tpm?: number | null; serviceTier?: ServiceTier | null }, org: Organization): void {
  if (input.serviceTier === "priority") throw new MakinaError("permission_denied", "Only an admin can give a key the priority service tier.", { param: "service_tier" });
  for (const [param, asked, most, what] of [
    ["rpm", input.rpm, org.defaultKeyRpm, "requests a minute"],
    ["tpm", input.tpm, org.defaultKeyTpm, "tokens a minute"],
  ] as const) {
    if (most !== null && asked !== undefined && asked !== null && asked > most) {
      throw new MakinaError("permission_denied", `A member's key can allow at most ${most} ${what}, the organization's default; ask an admin for more.`, { param });
    }
  }
}
