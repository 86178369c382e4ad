import { z } from "zod";
import { BUDGET_PERIODS } from "./budgets.js";

/**
 * The request parameter an issue is about: its path up to the first array index, dotted
 * (`["stacks", 1]` → `stacks`), as the error body's `param` names it.
 */
export function paramOf(path: readonly PropertyKey[]): string {
  const until = path.findIndex((part) => typeof part === "number");
  return (until < 0 ? path : path.slice(0, until)).map(String).join(".");
}

type Issue = { input?: unknown; path?: PropertyKey[] };

const missing = (iss: Issue) => `Missing required parameter: '${paramOf(iss.path ?? [])}'.`;

/**
 * Every issue of a field reads the same: a value not given (absent or null) is a missing parameter, anything
 * else "must be" `what`. The relay answers the first with `missing_required_parameter`, the rest with
 * `invalid_value` (see relay/http/admin/check-input.ts).
 */
export const must = (what: string) => ({
  error: (iss: Issue) => (iss.input === undefined || iss.input === null ? missing(iss) : `'${paramOf(iss.path ?? [])}' must be ${what}.`),
});

/** A message of its own for every issue of a field. */
export const says = (message: string) => ({ error: () => message });

/** A string that must be given: absent, null or empty is missing. */
export const requiredText = () => z.string(must("a string")).min(1, { error: missing });

/**
 * A string a form must fill (sign-in, passwords): anything but a non-empty string is missing, and `message`
 * says what to fill in. The issue is marked `missing`, which the relay answers with `missing_required_parameter`.
 */
export const filled = (message: string) => z.custom<string>((v) => typeof v === "string" && v !== "", { error: message, params: { missing: true } });

/** A string that may be left out (or null). */
export const optionalText = () => z.string(must("a string")).nullish();

/** The longest name (of an organization, machine, stack or key), in characters. */
export const MAX_NAME_CHARS = 100;
/** Control and formatting characters (terminal escapes, bidirectional overrides): never in a name. */
const UNSAFE_IN_NAME = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u;
const nameRule = must(`a name of 1 to ${MAX_NAME_CHARS} characters without control or formatting characters`);

/** A name people read in lists, logs and terminals: 1 to 100 characters, no control or formatting ones. */
export const nameText = () =>
  z
    .string(must("a string"))
    .min(1, { error: missing })
    .max(MAX_NAME_CHARS, nameRule)
    .refine((v) => !UNSAFE_IN_NAME.test(v), nameRule);

/** The longest model id, in characters. */
export const MAX_MODEL_ID_CHARS = 128;
/**
 * A model id as clients send it in `model` (`qwen2.5-7b`, `Qwen/Qwen2.5-7B-Instruct`, `llama3:8b`): letters,
 * digits and `. _ - : / @ +`, starting with a letter or digit, at most 128. Nothing a shell, a URL or a code
 * snippet would read differently once pasted.
 */
export const MODEL_ID = /^[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,127}$/;
export const modelIdText = () =>
  z.preprocess(
    // Empty is left out: the relay makes the id from the model's file name.
    (v) => (v === "" ? undefined : v),
    z.string(must("a string")).regex(MODEL_ID, must("a model id of letters, digits and . _ - : / @ + (at most 128, starting with a letter or digit)")).nullish(),
  );

/** An organization's id or slug: the operator names one; a signed-in user's own is taken when none is named. */
export const orgRef = () => z.string(must("a string")).nullish();

/** A whole number of at least 1, or null (none); `what` says it in the error. */
export const positiveInt = (what = "a positive integer") => z.number(must(what)).int(must(what)).min(1, must(what));

/**
 * A token budget: `{tokens, period}` (a positive integer of at most 10^15; `day`, `week` or `month`, calendar
 * periods in UTC); null removes it, absent keeps it.
 */
export const budgetField = () => {
  const shape = must("an object {tokens, period} with tokens a positive integer and period one of day, week, month, or null for none");
  return z
    .strictObject({ tokens: positiveInt("a positive integer").max(1e15, must("at most 1000000000000000")), period: z.enum(BUDGET_PERIODS, must(`one of ${BUDGET_PERIODS.join(", ")}`)) }, shape)
    .nullable()
    .optional();
};

/** A list of ids; null or absent: no restriction. */
export const idList = () => {
  const list = { error: (iss: Issue) => `'${paramOf(iss.path ?? [])}' must be an array of strings.` };
  return z.array(z.string(list), list).nullish();
};

/**
 * A time to come: milliseconds since the epoch, or an ISO 8601 date-time (`2026-12-31`, `2026-12-31T18:00:00Z`),
 * taken as milliseconds; null clears it. (The relay checks that it is in the future.)
 */
export const futureTime = () => {
  const rule = must("a time: an ISO 8601 date-time such as 2026-12-31T18:00:00Z, or milliseconds since the epoch");
  return z.preprocess((v) => (typeof v === "string" && v !== "" && !Number.isNaN(Date.parse(v)) ? Date.parse(v) : v), z.number(rule).int(rule).min(1, rule).nullish());
};

/** A time: milliseconds since the epoch, or an ISO 8601 date-time (`2026-12-31`, `2026-12-31T18:00:00Z`), taken as milliseconds. */
export const timeParam = () => {
  const rule = must("a time: an ISO 8601 date-time such as 2026-12-31T18:00:00Z, or milliseconds since the epoch");
  return z.preprocess((v) => (typeof v === "string" && v !== "" && !Number.isNaN(Date.parse(v)) && !/^\d+$/.test(v) ? Date.parse(v) : v), z.coerce.number(rule).int(rule).min(0, rule));
};

/** `true` or `false`. */
export const flag = () => z.boolean(must("true or false"));

/** A layer's options as the client gives them (`key: value`; the relay checks names, types and ranges for the layer's kind). */
export const layerOptions = () => z.record(z.string(), z.unknown(), must("an object of option names to values")).nullish();
