import { MakinaError } from "../../../proto/index.js";
import type { KeyRoute } from "../../admin-contract/index.js";
import type { Access } from "../../auth/index.js";
import type { ApiKeyChanges, ControlPlane, Organization } from "../../control/index.js";
import type { PublicApiKey } from "../../keys/index.js";
import type { UsageRecorder } from "../../usage/index.js";
import type { RouteHandlers } from "./mount-routes.js";
import { toWire } from "./to-wire.js";
import type { AuditRecorder } from "./audit-trail.js";

/** API keys: anyone of the organization lists and makes them; admins revoke any, members their own. */
export function keyRoutes(control: ControlPlane, usage: UsageRecorder, record: AuditRecorder): RouteHandlers<KeyRoute, Access> {
  const target = (k: { id: string; name: string | null; prefix: string }) => ({ kind: "key", id: k.id, name: k.name ?? k.prefix });
  return {
    "GET /admin/v1/keys": async (input, access) => {
      const { org: orgRef, q, sort, order = "asc", state, page, per_page } = input.query();
      const org = access.org(orgRef);
      // Paged by the database: 10,000 keys cost a page of them. The last day's use as recorded so far.
      await usage.flush();
      const now = Date.now();
      const usageSince = Math.floor((now - 86_400_000) / 60_000) * 60_000;
      const { keys, total } = await control.keyPage(org.id, { q, sort, order, state, offset: (page - 1) * per_page, limit: per_page, now, usageSince });
      const data = keys.map(({ requests, tokens, ...k }) => ({ ...toWire(onWire(k, now)), requests_24h: requests, tokens_24h: tokens }));
      return { object: "list" as const, data, total, page, per_page };
    },
    "POST /admin/v1/keys": async (input, access) => {
      const body = input.body();
      const org = access.org(body.org);
      if (!access.isAdmin) withinOrgDefaults(body, org);
      const expiresAt = inFuture(body.expires_at);
      const created = await control.createKey(org.id, {
        name: body.name ?? null,
        stackIds: body.stacks ?? null,
        machineIds: body.machines ?? null,
        rpm: body.rpm ?? null,
        tpm: body.tpm ?? null,
        createdBy: access.userId,
        expiresAt,
      });
      await record(access, {
        orgId: org.id,
        action: "key.created",
        target: target(created.record),
        detail: { rpm: created.record.rpm, tpm: created.record.tpm, stacks: created.record.stackIds, machines: created.record.machineIds, expires_at: created.record.expiresAt },
      });
      return toWire({ ...onWire(created.record, Date.now()), key: created.key });
    },
    "PATCH /admin/v1/keys/:id": async (input, access) => {
      const key = await control.key(input.params.id);
      access.see(key.orgId, "API key", input.params.id, "key");
      const org = access.org(key.orgId);
      if (!access.isAdmin && key.createdBy !== access.userId) throw new MakinaError("permission_denied", "Members can change only the keys they created.");
      const body = input.body();
      if (!access.isAdmin) withinOrgDefaults(body, org);
      const asked: ApiKeyChanges = {
        ...(body.name !== undefined && { name: body.name }),
        ...(body.stacks !== undefined && { stackIds: body.stacks?.length ? body.stacks : null }),
        ...(body.machines !== undefined && { machineIds: body.machines?.length ? body.machines : null }),
        ...(body.rpm !== undefined && { rpm: body.rpm }),
        ...(body.tpm !== undefined && { tpm: body.tpm }),
        // The expiry it has already may be past: sent back as it is, it is no change, not a refusal.
        ...(body.expires_at !== undefined && { expiresAt: body.expires_at === key.expiresAt ? key.expiresAt : inFuture(body.expires_at) }),
      };
      // A form sends every field; only what differs from the key as it is changes, and is recorded.
      const changes = Object.fromEntries(Object.entries(asked).filter(([field, value]) => JSON.stringify(value) !== JSON.stringify(key[field as keyof ApiKeyChanges])));
      const updated = await control.updateKey(key.id, changes);
      if (Object.keys(changes).length > 0) {
        await record(access, { orgId: key.orgId, action: "key.changed", target: target(updated), detail: toWire(changes) as Record<string, unknown> });
      }
      return toWire(onWire(updated, Date.now()));
    },
    "POST /admin/v1/keys/:id/revoke": async ({ params }, access) => {
      const key = await control.key(params.id);
      access.see(key.orgId, "API key", params.id, "key");
      if (!access.isAdmin && key.createdBy !== access.userId) throw new MakinaError("permission_denied", "Members can revoke only the keys they created.");
      const revoked = await control.revokeKey(key.id);
      await record(access, { orgId: key.orgId, action: "key.revoked", target: target(revoked) });
      return toWire(revoked);
    },
  };
}

/** A key as the admin API shows it: `expired` once past its expiry (still `active` in the store). */
function onWire<K extends PublicApiKey>(key: K, now: number): Omit<K, "state"> & { state: "active" | "revoked" | "expired" } {
  return { ...key, state: key.state === "active" && key.expiresAt !== null && now >= key.expiresAt ? "expired" : key.state };
}

/** An expiry must be to come: a key that should stop now is revoked instead. */
function inFuture(at: number | null | undefined): number | null {
  if (at === undefined || at === null) return null;
  if (at <= Date.now()) throw new MakinaError("invalid_value", "'expires_at' must be in the future; to stop a key now, revoke it.", { param: "expires_at" });
  return at;
}

/**
 * A member's key allows no more than the organization's default limits (where it has them): a member cannot
 * give itself more than an admin set for everyone. Left unset, a limit is the default.
 */
function withinOrgDefaults(body: { rpm?: number | null; tpm?: number | null }, org: Organization): void {
  for (const [param, asked, most, what] of [
    ["rpm", body.rpm, org.defaultKeyRpm, "requests a minute"],
    ["tpm", body.tpm, org.defaultKeyTpm, "tokens a minute"],
  ] as const) {
    if (most !== null && asked !== undefined && asked !== null && asked > most) {
      throw new MakinaError("permission_denied", `A member's key can allow at most ${most} ${what}, the organization's default; ask an admin for more.`, { param });
    }
  }
}
