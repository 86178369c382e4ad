import { MakinaError } from "../../../proto/index.js";

/**
 * A refusal of a body that was said again in another API's terms (a Messages or Responses body checked as a
 * chat request), told in the terms of the body the client sent: its `param`, and the same name where its text
 * quotes it.
 */
export function renameParams(err: unknown, rename: (param: string) => string): unknown {
  if (!(err instanceof MakinaError) || err.param === null) return err;
  const param = rename(err.param);
  if (param === err.param) return err;
  return new MakinaError(err.code, err.message.split(`'${err.param}`).join(`'${param}`), { param, retryAfterMs: err.retryAfterMs, cause: err.cause });
}

/** A rename by the first of `rules` whose pattern matches the parameter's start; others stay as they are. */
export function renameBy(rules: readonly [RegExp, string][]): (param: string) => string {
  return (param) => {
    for (const [pattern, to] of rules) if (pattern.test(param)) return param.replace(pattern, to);
    return param;
  };
}
