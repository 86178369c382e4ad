import { actorOf, type AuditEntry, type AuditLog } from "../../audit/index.js";
import type { Access } from "../../auth/index.js";

/** What an admin route records: the action, where and on what; who and from where come from the caller. */
export type AdminAuditEntry = Omit<AuditEntry, "actor" | "address" | "outcome" | "detail"> & { detail?: AuditEntry["detail"] };

/** Records an admin call's action as done by its caller, from its address. */
export type AuditRecorder = (access: Access, entry: AdminAuditEntry) => Promise<void>;

/** Records an admin call's action in the audit log as done by its caller, from its address. */
export function auditTrail(audit: AuditLog): AuditRecorder {
  return (access, entry) => audit.record({ ...entry, detail: entry.detail ?? null, actor: actorOf(access.principal), address: access.address });
}
