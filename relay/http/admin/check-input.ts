import type { z } from "zod";
import { MakinaError } from "../../../proto/index.js";
import { absent, paramOf } from "../../admin-contract/index.js";

/**
 * Checks a request's body or query against its schema in the admin contract: the checked value, or the first
 * problem as a MakinaError naming the parameter, worded by the contract: `missing_required_parameter` when the
 * parameter was not given, `invalid_value` for anything else.
 */
export function checkInput<S extends z.ZodType>(schema: S, value: unknown): z.output<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const param = paramOf(issue.path);
  const given = param === "" ? value : param.split(".").reduce<unknown>((v, key) => (v !== null && typeof v === "object" ? (v as Record<string, unknown>)[key] : undefined), value);
  throw new MakinaError(absent(given) ? "missing_required_parameter" : "invalid_value", issue.message, param ? { param } : {});
}
