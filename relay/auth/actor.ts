import type { SessionUser } from "./web-sessions.js";

/**
 * Who asks the control plane for something, and from where: the relay's operator (the admin token: every
 * organization), a signed-in user of one organization with its role, or the bootstrap (`makina up`'s first
 * start, acting as the operator on this relay's own data). Every command takes one; the control plane decides
 * what it may do and records what it did.
 */
export type Actor = ({ kind: "operator" } | ({ kind: "user" } & SessionUser) | { kind: "bootstrap" }) & {
  /** The caller's address, as the relay saw it (for the audit log); null when there is none (the bootstrap, tests). */
  readonly address: string | null;
};

/** The operator, calling from `address`. */
export function operatorActor(address: string | null = null): Actor {
  return { kind: "operator", address };
}

/** A signed-in user, calling from `address`. */
export function userActor(session: SessionUser, address: string | null = null): Actor {
  return { ...session, kind: "user", address };
}

/** `makina up`: what it makes or remakes on a start. */
export const BOOTSTRAP: Actor = Object.freeze({ kind: "bootstrap", address: null });
