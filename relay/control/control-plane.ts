import type { Actor } from "../auth/index.js";
import type { Overview } from "../admin-contract/index.js";
import { Activity } from "./activity.js";
import { Alerts } from "./alerts.js";
import { SsoSettings } from "./sso-settings.js";
import { bootstrap, type BootstrapInput, type Bootstrapped } from "./bootstrap.js";
import { ControlContext, type ControlDeps } from "./control-context.js";
import { Hub } from "./hub.js";
import { Keys } from "./keys.js";
import { Machines } from "./machines.js";
import { Orgs } from "./orgs.js";
import { overviewOf } from "./overview.js";
import { SignIns } from "./sign-ins.js";
import { Stacks } from "./stacks.js";
import { Users } from "./users.js";

/**
 * The control plane: every command and read of the relay's state, by resource, shared by the admin API, sign-in
 * and `makina up`. Each takes its caller (an {@link Actor}) and does, in one place, what the caller may
 * (authorize), the change, and its record in the audit log; the HTTP handlers only read the request, call, and
 * write the answer. Inputs come typed (the admin API checks their shape against its contract); here are the rules
 * only the relay's state can answer: who may, what exists, what conflicts, what a machine can run. Errors are
 * MakinaErrors.
 */
export class ControlPlane {
  readonly orgs: Orgs;
  readonly machines: Machines;
  readonly stacks: Stacks;
  readonly keys: Keys;
  readonly users: Users;
  readonly signIns: SignIns;
  readonly activity: Activity;
  readonly alerts: Alerts;
  readonly sso: SsoSettings;
  readonly hub: Hub;
  private readonly c: ControlContext;

  constructor(deps: ControlDeps) {
    this.c = new ControlContext(deps);
    this.orgs = new Orgs(this.c);
    this.machines = new Machines(this.c);
    this.stacks = new Stacks(this.c);
    this.keys = new Keys(this.c);
    this.users = new Users(this.c);
    this.signIns = new SignIns(this.c);
    this.activity = new Activity(this.c);
    this.alerts = new Alerts(this.c);
    this.sso = new SsoSettings(this.c);
    this.hub = new Hub(this.c, this.stacks);
  }

  /** The overview of an organization (or one of its machines or stacks), for anyone of it. */
  overview(actor: Actor, ask: { org?: string | null; machine?: string; stack?: string }): Promise<Overview> {
    return overviewOf(this.c, actor, ask);
  }

  /** `makina up`'s start: what it needs, made the first time and reused after (see {@link bootstrap}). */
  bootstrap(input: BootstrapInput): Promise<Bootstrapped> {
    return bootstrap(this.c, this, input);
  }
}
