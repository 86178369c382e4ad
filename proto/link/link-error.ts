import type { LinkError } from "../generated/agent_link.js";
import { MakinaError } from "../errors/index.js";

/** Encodes any error for the link; internal details stay on the sending side. */
export function toLinkError(err: unknown): LinkError {
  const e = MakinaError.from(err);
  return { code: e.code, message: e.message, retryAfterMs: e.retryAfterMs ?? 0 };
}

/** Decodes a `LinkError` into the one error type. */
export function fromLinkError(err: LinkError): MakinaError {
  return MakinaError.fromLink(err.code, err.message, err.retryAfterMs || undefined);
}
