import { MakinaError } from "../../proto/index.js";
import type { Actor } from "../auth/index.js";
import type { Organization } from "../store/index.js";

/** Finds an organization by id or slug, at once (the gateway's directory holds them all in memory). */
export type OrgFinder = (idOrSlug: string) => Organization | undefined;

/**
 * What an actor may see and do. The operator (and the bootstrap) acts on any organization it names; a user acts
 * on its own organization only, and nothing of another organization is visible to it (it reads as not found).
 * Admins of an organization manage it; members see it and manage their own keys. Used by the control plane's
 * commands only: a command authorizes its caller itself.
 */
export class Policy {
  constructor(
    readonly actor: Actor,
    /** The organization with this id or slug, if any. */
    private readonly findOrg: OrgFinder,
  ) {}

  /** The signed-in user's id; null for the operator and the bootstrap. */
  get userId(): string | null {
    return this.actor.kind === "user" ? this.actor.user.id : null;
  }

  /** True for the operator, the bootstrap and admins of the organization. */
  get isAdmin(): boolean {
    return this.actor.kind !== "user" || this.actor.user.role === "admin";
  }

  /** True for the operator and the bootstrap: every organization. */
  get isOperator(): boolean {
    return this.actor.kind !== "user";
  }

  /** The organization a call acts on: the one named (operator), or the user's own (a name, if given, must be it). */
  org(ref: string | null | undefined): Organization {
    const named = ref || undefined;
    if (this.actor.kind !== "user") {
      if (!named) throw new MakinaError("missing_required_parameter", "Missing required parameter: 'org'.", { param: "org" });
      const org = this.findOrg(named);
      if (!org) throw new MakinaError("not_found", `No organization '${named}'.`, { param: "org" });
      return org;
    }
    const own = this.findOrg(this.actor.user.orgId);
    if (!own || (named && named !== own.id && named !== own.slug)) throw new MakinaError("not_found", `No organization '${named ?? ""}'.`, { param: "org" });
    return own;
  }

  /** The organization whose resources this caller sees; null for the operator (all). */
  get orgScope(): string | null {
    return this.actor.kind === "user" ? this.actor.user.orgId : null;
  }

  /** Throws `not_found` unless a resource of `orgId` is visible to this caller. */
  see(orgId: string, what: string, id: string, param: string): void {
    if (this.orgScope !== null && this.orgScope !== orgId) throw new MakinaError("not_found", `No ${what} '${id}'.`, { param });
  }

  /** Throws `permission_denied` unless the caller is the operator or an admin of its organization. */
  requireAdmin(action: string): void {
    if (!this.isAdmin) throw new MakinaError("permission_denied", `Only an organization admin can ${action}.`);
  }

  /** Throws `permission_denied` unless the caller is the operator (the admin token). */
  requireOperator(action: string): void {
    if (!this.isOperator) throw new MakinaError("permission_denied", `Only the relay's operator (admin token) can ${action}.`);
  }
}
