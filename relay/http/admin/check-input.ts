import type { z } from "zod";
import { MakinaError } from "../../../proto/index.js";
import { paramOf } from "../../admin-contract/index.js";
import { refuse } from "../json-values.js";

/** Where a key lies in a request: `harness_options.routes[0].model`. */
function pathText(path: readonly PropertyKey[]): string {
  return path.map((part, i) => (typeof part === "number" ? `[${part}]` : i === 0 ? String(part) : `.${String(part)}`)).join("");
}

/**
 * Checks a request's body or query against its schema in the admin contract: the checked value, or the first
 * problem as a MakinaError naming the parameter, worded by the contract. A field the schema does not take (its
 * objects are strict) is `unknown_parameter`, named with its path (`rmp`, or `a.b` inside a closed object), and
 * comes before any other problem: a misspelt field is what made the one it stands for missing. A parameter not
 * given (absent or null, a required text left empty, or a form field the contract marks `missing`) is
 * `missing_required_parameter`; anything else `invalid_value`.
 */
export function checkInput<S extends z.ZodType>(schema: S, value: unknown): z.output<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issues = result.error.issues;
  const unknown = issues.find((i) => i.code === "unrecognized_keys");
  if (unknown) throw refuse.unknown(pathText([...unknown.path, unknown.keys[0]!]));
  const issue = issues[0]!;
  const param = paramOf(issue.path);
  const given = param === "" ? value : param.split(".").reduce<unknown>((v, key) => (v !== null && typeof v === "object" ? (v as Record<string, unknown>)[key] : undefined), value);
  const missing = issue.code === "custom" ? issue.params?.missing === true : given === undefined || given === null || (given === "" && issue.code === "too_small");
  throw new MakinaError(missing ? "missing_required_parameter" : "invalid_value", issue.message, param ? { param } : {});
}
