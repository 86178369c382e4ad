import { BOOTSTRAP } from "../auth/index.js";
import { randomBase62 } from "../ids/index.js";
import { hashSecret, verifyPassword } from "../keys/index.js";
import type { Organization } from "../store/index.js";
import type { ControlContext } from "./control-context.js";
import type { Keys } from "./keys.js";
import type { Machines } from "./machines.js";
import type { Orgs } from "./orgs.js";
import type { Stacks } from "./stacks.js";
import type { StackView } from "./stack-views.js";
import type { Users } from "./users.js";

/** What `makina up` kept from its last start (its own files), to be reused while it still holds. */
export interface BootstrapKept {
  /** The first admin's password as first made; empty once the admin changed it. */
  adminPassword?: string;
  machineId?: string;
  stackId?: string;
  apiKey?: string;
}

/** What `makina up` asks for on a start. */
export interface BootstrapInput {
  kept: BootstrapKept;
  /** This machine's name, for a machine made now. */
  machineName: string;
  /** The demo stack's model (a path, URL or `hf:` reference), for a stack made now. */
  modelRef: string;
  /** Its model id; absent: the file's name. */
  modelId?: string;
}

/** What a start of `makina up` has: everything made now or reused. */
export interface Bootstrapped {
  org: Organization;
  /** The first admin's login and password (empty once the admin changed it: it is written down nowhere then). */
  admin: { login: string; password: string };
  /** This machine, with its token when it was made now (reused: the caller has it). */
  machine: { id: string; token: string | null };
  stack: StackView;
  /** Whether the model asked for was not used: the existing demo stack keeps its own. */
  modelIgnored: boolean;
  apiKey: string;
}

/** The first admin's login. */
const ADMIN_LOGIN = "admin";

/**
 * `makina up`'s start as one command: the organization `default`, an admin login, this machine, a deployed demo
 * stack and an API key, each made on the first start (recorded in the audit log as done by `makina up`) and
 * reused while it still holds on later ones.
 */
export async function bootstrap(c: ControlContext, commands: { orgs: Orgs; users: Users; machines: Machines; stacks: Stacks; keys: Keys }, input: BootstrapInput): Promise<Bootstrapped> {
  const { kept } = input;
  const org = (await c.store.orgs.find("default")) ?? (await commands.orgs.create(BOOTSTRAP, { name: "default" }));
  let password = kept.adminPassword ?? "";
  const admin = await c.store.users.findByLogin(ADMIN_LOGIN);
  if (!admin) {
    password = randomBase62(20);
    await commands.users.create(BOOTSTRAP, { org: org.id, login: ADMIN_LOGIN, password, role: "admin" });
  } else if (!password || !(await verifyPassword(password, admin.passwordHash))) {
    // Changed in the web application since: it is the admin's own now, and not written down anywhere.
    password = "";
  }
  let machine: { id: string; token: string | null } | undefined = kept.machineId && (await c.store.machines.get(kept.machineId)) ? { id: kept.machineId, token: null } : undefined;
  if (!machine) {
    const made = await commands.machines.create(BOOTSTRAP, { org: org.id, name: input.machineName });
    machine = { id: made.machine.id, token: made.token };
  }
  const found = kept.stackId ? await c.store.stacks.get(kept.stackId) : undefined;
  let stack = found ? await commands.stacks.get(BOOTSTRAP, found.id) : await commands.stacks.create(BOOTSTRAP, { org: org.id, name: "quickstart", machine: machine.id, runtime: "gguf", model: input.modelRef, modelId: input.modelId });
  if (stack.state === "draft" || stack.state === "failed") stack = await commands.stacks.deploy(BOOTSTRAP, stack.id);
  // The saved key is reused only while it is still a live key of this organization.
  const keyRecord = kept.apiKey ? await c.store.keys.findByHash(hashSecret(kept.apiKey)) : undefined;
  const apiKey = kept.apiKey && keyRecord?.state === "active" && keyRecord.orgId === org.id ? kept.apiKey : (await commands.keys.create(BOOTSTRAP, org.id, { name: "quickstart" })).key;
  return { org, admin: { login: ADMIN_LOGIN, password }, machine, stack, modelIgnored: found !== undefined && input.modelRef !== found.modelRef, apiKey };
}
