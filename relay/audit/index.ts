export { AuditLog, actorOf, type AuditEntry } from "./audit-log.js";
