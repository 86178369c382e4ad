import { openDatabase, type Db } from "./open-database.js";
import { OrganizationStore } from "./organizations.js";
import { UserStore } from "./users.js";
import { MachineStore } from "./machines.js";
import { StackStore } from "./stacks.js";
import { DeploymentStore } from "./deployments.js";
import { ApiKeyStore } from "./api-keys.js";
import { SettingsStore } from "./settings.js";
import { SessionStore } from "./sessions.js";

export { slugify, type Organization } from "./organizations.js";
export type { User } from "./users.js";
export type { Machine, MachineState, HardwareSummary, MachineInventory } from "./machines.js";
export { type Stack, type StackState, type RuntimeKind, type NewStack } from "./stacks.js";
export type { Deployment, DeploymentStep } from "./deployments.js";
export type { ApiKeyRecord } from "./api-keys.js";
export type { SessionRecord } from "./sessions.js";

/** The relay's persistent state: one SQLite file, one store per table family. */
export interface Store {
  readonly db: Db;
  readonly orgs: OrganizationStore;
  readonly users: UserStore;
  readonly machines: MachineStore;
  readonly stacks: StackStore;
  readonly deployments: DeploymentStore;
  readonly keys: ApiKeyStore;
  readonly settings: SettingsStore;
  readonly sessions: SessionStore;
  close(): void;
}

/** Opens the relay store at `file` (migrating it) and builds its parts; writes it makes on its own that fail go to `onWriteError`. */
export function openStore(file: string, options: { onWriteError?: (what: string, err: unknown) => void } = {}): Store {
  const db = openDatabase(file);
  const keys = new ApiKeyStore(db, options.onWriteError);
  return {
    db,
    orgs: new OrganizationStore(db),
    users: new UserStore(db),
    machines: new MachineStore(db),
    stacks: new StackStore(db),
    deployments: new DeploymentStore(db),
    keys,
    settings: new SettingsStore(db),
    sessions: new SessionStore(db),
    close: () => {
      keys.flushTouches();
      if (db.open) db.close();
    },
  };
}
