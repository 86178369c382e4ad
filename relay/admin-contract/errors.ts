/**
 * Every error answer of the relay, admin API included, in the envelope of `shared/spec/decisions.md`:
 * `param` names the request field at fault (`harness_options.routes[0].model`), null when none.
 */
export interface ErrorBody {
  error: {
    message: string;
    type: string;
    param: string | null;
    code: string | null;
  };
}
