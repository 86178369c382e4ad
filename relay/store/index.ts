import { openDatabase, type Database, type DatabaseLocation, type Db } from "./open-database.js";
import { ChangeNotices } from "./change-notices.js";
import { OrganizationStore } from "./organizations.js";
import { UserStore } from "./users.js";
import { MachineStore } from "./machines.js";
import { StackStore } from "./stacks.js";
import { DeploymentStore } from "./deployments.js";
import { ApiKeyStore } from "./api-keys.js";
import { SettingsStore } from "./settings.js";
import { SessionStore } from "./sessions.js";
import { AuditEventStore } from "./audit-events.js";
import { RequestLogStore } from "./request-log.js";
import { SignInStore } from "./sign-ins.js";
import { AlertStore } from "./alerts.js";
import { SsoStore } from "./sso.js";

export { slugify, type Organization } from "./organizations.js";
export type { User } from "./users.js";
export type { Machine, MachineState, HardwareSummary, MachineInventory } from "./machines.js";
export { type Stack, type StackState, type StackResidency, type StackChanges, type RuntimeKind, type NewStack } from "./stacks.js";
export type { Deployment, DeploymentStep } from "./deployments.js";
export type { ApiKeyRecord, ApiKeyChanges } from "./api-keys.js";
export type { KeyPageAsk, KeySort } from "./key-page.js";
export type { SessionRecord } from "./sessions.js";
export type { SignInStore, FailureCount } from "./sign-ins.js";
export type { AuditActor, AuditEvent, AuditFilter } from "./audit-events.js";
export type { RequestLogEntry, NewRequestLogEntry, RequestFilter, CapturedExchange, FiguresScope, RequestFigures, MinuteFigures } from "./request-log.js";
export type { StoreChange, ChangeListener } from "./change-notices.js";
export type { SsoStore, OrgSso, SsoFlow } from "./sso.js";
export type { AlertStore, AlertWebhook, AlertDelivery, AlertWebhookFields } from "./alerts.js";
export type { SettingsStore, SettingSwap } from "./settings.js";
export { type DatabaseLocation, type Db, databaseNowMs } from "./open-database.js";
export { transaction } from "./transaction.js";

/** The relay's persistent state: one database (a SQLite file, or PostgreSQL), one store per table family. */
export interface Store {
  readonly db: Db;
  readonly dialect: Database["dialect"];
  /** How many migrations opening it applied. */
  readonly migrated: number;
  /** SQLite only: changes when another process committed to the file (see {@link Database.externalVersion}). */
  readonly externalVersion?: () => number;
  /** Where the store announces changes to what the gateway reads per request. */
  readonly notices: ChangeNotices;
  readonly orgs: OrganizationStore;
  readonly users: UserStore;
  readonly machines: MachineStore;
  readonly stacks: StackStore;
  readonly deployments: DeploymentStore;
  readonly keys: ApiKeyStore;
  readonly settings: SettingsStore;
  readonly sessions: SessionStore;
  readonly signIns: SignInStore;
  readonly audit: AuditEventStore;
  readonly requests: RequestLogStore;
  readonly alerts: AlertStore;
  readonly sso: SsoStore;
  close(): Promise<void>;
}

/**
 * Opens the relay store (migrating it) and builds its parts; writes it makes on its own that fail go to
 * `onWriteError`; `relayId` is recorded on the machines this relay links.
 */
export async function openStore(
  location: DatabaseLocation,
  options: { onWriteError?: (what: string, err: unknown) => void; poolSize?: number; relayId?: string } = {},
): Promise<Store> {
  const database = await openDatabase(location, { poolSize: options.poolSize });
  const { db } = database;
  const notices = new ChangeNotices();
  const keys = new ApiKeyStore(db, database.dialect, notices, options.onWriteError);
  const machines = new MachineStore(db, notices, options.relayId ?? null);
  let closing: Promise<void> | undefined;
  return {
    db,
    dialect: database.dialect,
    migrated: database.migrated,
    externalVersion: database.externalVersion,
    notices,
    orgs: new OrganizationStore(db, notices),
    users: new UserStore(db, notices, database.dialect),
    machines,
    stacks: new StackStore(db, notices),
    deployments: new DeploymentStore(db),
    keys,
    settings: new SettingsStore(db, notices),
    sessions: new SessionStore(db),
    signIns: new SignInStore(db, database.dialect),
    audit: new AuditEventStore(db),
    requests: new RequestLogStore(db, database.dialect, database.appendRows),
    alerts: new AlertStore(db),
    sso: new SsoStore(db),
    close: () =>
      (closing ??= (async () => {
        try {
          await machines.drain();
          await keys.close();
        } finally {
          await database.close();
        }
      })()),
  };
}
