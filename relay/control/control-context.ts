import type { HubClient } from "../hub/index.js";
import type { Actor, WebSessions } from "../auth/index.js";
import { actorOf, type AuditEntry, type AuditLog } from "../audit/index.js";
import type { Deployer } from "../deploy/index.js";
import type { EventBus } from "../events/index.js";
import type { ReceivedLoad } from "../link/index.js";
import { MakinaError, type MachineLog } from "../../proto/index.js";
import type { Machine, Stack, Store } from "../store/index.js";
import type { BudgetLine } from "../limits/index.js";
import type { AlertDeps } from "./alerts.js";
import type { SsoDeps } from "./sso-settings.js";
import type { RequestLog, UsageRecorder } from "../usage/index.js";
import type { ModelFiles } from "./model-files.js";
import type { ModelInspector } from "./model-inspector.js";
import { Policy, type OrgFinder } from "./policy.js";

/** How agents reach this relay's link, for install commands. */
export interface LinkWhereabouts {
  /** `host:port` agents dial. */
  address: string;
  tls: boolean;
  /** The CA agents pin; null with a given certificate or no TLS. */
  caSha256: string | null;
  relayUrl: string;
  /** The TLS install listener and the pin of its key; null when the relay's own URL serves the install files. */
  install?: { url: string; pin: string } | null;
  /** The link addresses of the other relays on the same database. */
  otherAddresses?: () => Promise<readonly string[]>;
  /** Why the install commands printed work on this computer only, and what to change; null or absent when they reach beyond it. */
  reach?: string | null;
}

/** What the control plane's commands are built on. */
export interface ControlDeps {
  store: Store;
  deployer: Deployer;
  /** How agents reach the link, read when a command needs it (the listeners come up after the control plane). */
  link: () => LinkWhereabouts;
  events: EventBus;
  inspector: ModelInspector;
  /** Ends a machine's live link, if it has one. */
  dropLink: (machineId: string) => void;
  /** Asks machines about the model files stacks name by a local path. */
  files: ModelFiles;
  audit: AuditLog;
  sessions: WebSessions;
  usage: UsageRecorder;
  requests: RequestLog;
  /** Organizations by id or slug, from memory (the gateway's directory). */
  findOrg: OrgFinder;
  /** The machines' latest loads, wherever they are linked. */
  loadsOf: (machineIds: string[]) => Promise<Map<string, ReceivedLoad>>;
  /** Loads or unloads an on-demand stack's model on its machine now, wherever the machine is linked; resolves once done. */
  loadModel: (machineId: string, stackId: string, load: boolean) => Promise<void>;
  /** A machine's log (`stackId` "": its agent's own; else that stack's), read over its link wherever it is linked. */
  readLog: (machineId: string, stackId: string, after: number, limit: number) => Promise<MachineLog>;
  /** The most stacks an organization may have, and keys (not revoked) a person may have made: the operator's caps. */
  caps: { stacksPerOrg: number; keysPerPerson: number };
  /** Tokens a budget has used (and reserved) in its current period, as the gateway's limits count them. */
  budgetSpent?: (line: BudgetLine) => Promise<number>;
  /** Where alerts go out (absent: this relay sends none). */
  alerts?: AlertDeps;
  /** The model hub the Forge searches (absent: none). */
  hub?: HubClient;
  /** How people sign in through their organization's identity provider (absent: no single sign-on). */
  sso?: SsoDeps;
}

/**
 * A command's input, or how to read it: a command that first checks its caller reads its input after, so a caller
 * that may not call is told so before it is told what is wrong with the call (the admin API passes its body's
 * check this way).
 */
export type Given<T> = T | (() => T);

/** The input itself. */
export function given<T extends object | string>(input: Given<T>): T {
  return typeof input === "function" ? (input as () => T)() : input;
}

/** What a command records: the action, where and on what; who and from where come from its actor. */
export type CommandRecord = Omit<AuditEntry, "actor" | "address" | "outcome" | "detail"> & { detail?: AuditEntry["detail"] };

/** The shared context of the control plane's resources: its dependencies, the policy of an actor, and the audit trail. */
export class ControlContext {
  constructor(readonly deps: ControlDeps) {}

  get store(): Store {
    return this.deps.store;
  }

  get events(): EventBus {
    return this.deps.events;
  }

  /** What `actor` may see and do. */
  policy(actor: Actor): Policy {
    return new Policy(actor, this.deps.findOrg);
  }

  /** The machine `id` of organization `orgId` (of any, with null): not found when it is another's. */
  async machine(orgId: string | null, id: string): Promise<Machine> {
    const m = await this.store.machines.get(id);
    if (!m || (orgId !== null && m.orgId !== orgId)) throw new MakinaError("not_found", `No machine '${id}'.`, { param: "machine" });
    return m;
  }

  /** The stack `id` as stored, of organization `orgId` (of any, with null): not found when it is another's. */
  async stack(orgId: string | null, id: string): Promise<Stack> {
    const s = await this.store.stacks.get(id);
    if (!s || (orgId !== null && s.orgId !== orgId)) throw new MakinaError("not_found", `No stack '${id}'.`, { param: "stack" });
    return s;
  }

  /** Records what `actor` did, from its address, in the audit log. */
  record(actor: Actor, entry: CommandRecord): Promise<void> {
    return this.deps.audit.record({ ...entry, detail: entry.detail ?? null, actor: actorOf(actor), address: actor.address });
  }
}
