import { describe, expect, it } from "vitest";
import { z } from "zod";
import { MakinaError } from "../../proto/index.js";
import { ADMIN_ROUTES, type AdminCallArgs, type AdminRoute, type Org, type OrgRoute } from "../../relay/admin-contract/index.js";
import { ALERT_ROUTES } from "../../relay/admin-contract/alerts.js";
import { HUB_ROUTES } from "../../relay/admin-contract/hub.js";
import { EVENT_ROUTES } from "../../relay/admin-contract/events.js";
import { KEY_ROUTES } from "../../relay/admin-contract/keys.js";
import { MACHINE_ROUTES } from "../../relay/admin-contract/machines.js";
import { ORG_ROUTES } from "../../relay/admin-contract/orgs.js";
import { SESSION_ROUTES } from "../../relay/admin-contract/session.js";
import { STACK_ROUTES } from "../../relay/admin-contract/stacks.js";
import { USAGE_ROUTES } from "../../relay/admin-contract/usage.js";
import { AUDIT_ROUTES } from "../../relay/admin-contract/audit.js";
import { REQUEST_ROUTES } from "../../relay/admin-contract/requests.js";
import { USER_ROUTES } from "../../relay/admin-contract/users.js";
import { OVERVIEW_ROUTES } from "../../relay/admin-contract/overview.js";
import { CHOICE_ROUTES } from "../../relay/admin-contract/choices.js";
import { checkInput } from "../../relay/http/admin/check-input.js";
import type { RouteHandlers } from "../../relay/http/admin/mount-routes.js";
import { toWire } from "../../relay/http/admin/to-wire.js";

/** What checking `value` against route `route`'s body schema throws, as the error body would carry it. */
function refusal(route: keyof typeof ADMIN_ROUTES, value: unknown) {
  const schema = (ADMIN_ROUTES[route] as { body?: Parameters<typeof checkInput>[0] }).body!;
  try {
    checkInput(schema, value);
  } catch (err) {
    const e = err as MakinaError;
    return { code: e.code, param: e.param, message: e.message };
  }
  throw new Error("expected the body to be refused");
}

describe("the admin contract's request checks", () => {
  it("names a missing or empty parameter missing, and a wrong one invalid, in the words the API has always used", () => {
    expect(refusal("POST /admin/v1/machines", {})).toEqual({ code: "missing_required_parameter", param: "name", message: "Missing required parameter: 'name'." });
    expect(refusal("POST /admin/v1/machines", { name: "" })).toEqual({ code: "missing_required_parameter", param: "name", message: "Missing required parameter: 'name'." });
    expect(refusal("POST /admin/v1/machines", { name: 7 })).toEqual({ code: "invalid_value", param: "name", message: "'name' must be a string." });
    expect(refusal("POST /admin/v1/keys", { rpm: 0 })).toEqual({ code: "invalid_value", param: "rpm", message: "'rpm' must be a positive integer." });
    expect(refusal("POST /admin/v1/keys", { stacks: ["stk_a", 2] })).toEqual({ code: "invalid_value", param: "stacks", message: "'stacks' must be an array of strings." });
    expect(refusal("PATCH /admin/v1/orgs/:org", { default_key_tpm: 1.5 })).toMatchObject({ param: "default_key_tpm", message: "'default_key_tpm' must be a positive integer, or null for none." });
    expect(refusal("POST /admin/v1/stacks", { name: "s", machine: "m", runtime: "tpu", model: "x" })).toEqual({
      code: "invalid_value",
      param: "runtime",
      message: "Unknown runtime 'tpu'; expected one of gguf, vllm, mlx, openai.",
    });
    expect(refusal("POST /admin/v1/stacks", { name: "s", machine: "m", runtime: "gguf", model: "x", model_sha256: "abc" })).toMatchObject({ param: "model_sha256", message: "model_sha256 is a SHA-256 digest: 64 hex digits." });
    expect(refusal("POST /admin/v1/users", { login: "  ", password: "a long password" })).toMatchObject({ code: "invalid_value", param: "login" });
    expect(refusal("POST /auth/v1/sign-in", { login: "ada" })).toEqual({ code: "missing_required_parameter", param: "password", message: "Enter your password." });
    // A form field that is not a string is missing too; an empty number or choice is a wrong value, not a missing one.
    expect(refusal("POST /auth/v1/sign-in", { login: 5, password: "x" })).toEqual({ code: "missing_required_parameter", param: "login", message: "Enter your login." });
    expect(refusal("POST /admin/v1/keys", { rpm: "" })).toEqual({ code: "invalid_value", param: "rpm", message: "'rpm' must be a positive integer." });
    expect(refusal("POST /admin/v1/keys", { stacks: [null] })).toEqual({ code: "invalid_value", param: "stacks", message: "'stacks' must be an array of strings." });
    expect(refusal("POST /admin/v1/users", { login: "bob", password: "short", role: "boss" })).toMatchObject({ param: "role", message: "'role' must be 'admin' or 'member'." });
    expect(() => checkInput(ADMIN_ROUTES["GET /admin/v1/usage"].query, { range: "" })).toThrow(expect.objectContaining({ code: "invalid_value", param: "range", message: "'range' must be 24h or 30d." }));
  });

  it("refuses a field the route does not take, naming it, before anything else wrong with the body", () => {
    // The typo that used to make an unlimited key.
    expect(refusal("POST /admin/v1/keys", { org: "default", name: "typo", rmp: 5 })).toEqual({ code: "unknown_parameter", param: "rmp", message: "Unrecognized request argument supplied: rmp" });
    // A misspelt required field is named as unknown, not as the field it left missing; the first unknown one is named.
    expect(refusal("POST /admin/v1/machines", { nmae: "gpu-1", colour: "red" })).toEqual({ code: "unknown_parameter", param: "nmae", message: "Unrecognized request argument supplied: nmae" });
    expect(refusal("PATCH /admin/v1/keys/:id", { rpm: 0, expires: "2030-01-01" })).toMatchObject({ code: "unknown_parameter", param: "expires" });
    expect(refusal("PATCH /admin/v1/users/:id", { disabled: true, admin: true })).toMatchObject({ code: "unknown_parameter", param: "admin" });
    expect(refusal("POST /auth/v1/sign-in", { login: "ada", password: "a long password", remember: true })).toMatchObject({ code: "unknown_parameter", param: "remember" });
    // An absurdly long name is cut to 256 characters, as the gateway cuts it.
    const long = "x".repeat(5000);
    expect(refusal("POST /admin/v1/orgs", { name: "Acme", [long]: 1 })).toEqual({ code: "unknown_parameter", param: long.slice(0, 256), message: `Unrecognized request argument supplied: ${long.slice(0, 256)}` });
    // A layer's options stay free-form: the relay checks them for the layer's kind, not the contract.
    expect(checkInput(ADMIN_ROUTES["PATCH /admin/v1/stacks/:id"].body, { harness_options: { prompt: "Be brief.", anything: 1 } }).harness_options).toEqual({ prompt: "Be brief.", anything: 1 });
    // Queries are closed too.
    expect(() => checkInput(ADMIN_ROUTES["GET /admin/v1/keys"].query, { per_page: "10", perpage: "10" })).toThrow(expect.objectContaining({ code: "unknown_parameter", param: "perpage" }));
  });

  it("names an unknown field inside a closed object by its path", () => {
    const schema = z.strictObject({ limits: z.strictObject({ rpm: z.number().optional() }).optional(), rules: z.array(z.strictObject({ model: z.string() })).optional() });
    expect(() => checkInput(schema, { limits: { rmp: 5 } })).toThrow(expect.objectContaining({ code: "unknown_parameter", param: "limits.rmp", message: "Unrecognized request argument supplied: limits.rmp" }));
    expect(() => checkInput(schema, { rules: [{ model: "a" }, { model: "b", weight: 2 }] })).toThrow(expect.objectContaining({ code: "unknown_parameter", param: "rules[1].weight" }));
  });

  it("closes every body and query of the contract", () => {
    const open = Object.entries(ADMIN_ROUTES).flatMap(([route, spec]) =>
      (["body", "query"] as const).flatMap((part) => {
        const schema = (spec as { body?: z.ZodType; query?: z.ZodType })[part];
        if (!schema) return [];
        const issues = schema.safeParse({ not_a_field: 1 }).error?.issues ?? [];
        return issues.some((i) => i.code === "unrecognized_keys" && i.keys.includes("not_a_field")) ? [] : [`${route} ${part}`];
      }),
    );
    expect(open).toEqual([]);
  });

  it("gives the handler the request with its defaults and normalised values", () => {
    const body = checkInput(ADMIN_ROUTES["POST /admin/v1/stacks"].body, { name: "s", machine: "m", runtime: "gguf", model: "x", model_sha256: "AB:".repeat(31) + "AB" });
    expect(body).toMatchObject({ endpoint: true, model_sha256: "ab".repeat(32) });
    expect(checkInput(ADMIN_ROUTES["POST /admin/v1/users"].body, { login: " ada@example.org ", password: "a long password" })).toEqual({ login: "ada@example.org", password: "a long password", role: "member" });
    expect(checkInput(ADMIN_ROUTES["GET /admin/v1/usage"].query, {})).toEqual({ range: "24h", by: "key", page: 1, per_page: 100 });
    expect(checkInput(ADMIN_ROUTES["POST /admin/v1/users"].body, { login: "bo", password: "a long password", role: "" }).role).toBe("member");
    const stack = { name: "s", machine: "m", runtime: "gguf", model: "x" };
    expect([undefined, true, false, null].map((endpoint) => checkInput(ADMIN_ROUTES["POST /admin/v1/stacks"].body, { ...stack, endpoint }).endpoint)).toEqual([true, true, false, false]);
  });

  it("declares each route once, under the prefix its authentication covers", () => {
    const tables = [ORG_ROUTES, MACHINE_ROUTES, STACK_ROUTES, KEY_ROUTES, USER_ROUTES, USAGE_ROUTES, AUDIT_ROUTES, REQUEST_ROUTES, OVERVIEW_ROUTES, CHOICE_ROUTES, EVENT_ROUTES, SESSION_ROUTES, ALERT_ROUTES, HUB_ROUTES];
    const keys = tables.flatMap((t) => Object.keys(t));
    expect(new Set(keys).size).toBe(keys.length);
    expect(Object.keys(ADMIN_ROUTES).sort()).toEqual([...keys].sort());
    expect(keys.filter((k) => !/^(GET|POST|PUT|PATCH|DELETE) \/(admin|auth)\/v1\//.test(k))).toEqual([]);
    expect(Object.keys(SESSION_ROUTES).every((k) => k.includes(" /auth/v1/"))).toBe(true);
    expect(keys.filter((k) => k.includes(" /auth/v1/")).sort()).toEqual(Object.keys(SESSION_ROUTES).sort());
  });
});

describe("the admin API's answers", () => {
  it("are the relay's values in snake_case, deeply", () => {
    expect(toWire({ defaultKeyRpm: 1, modelSha256: "x", deployment: { steps: [{ startedAt: 2, detail: { doneBytes: 3 } }] } })).toEqual({
      default_key_rpm: 1,
      model_sha256: "x",
      deployment: { steps: [{ started_at: 2, detail: { done_bytes: 3 } }] },
    });
    // A key named `__proto__` in what a client gave stays a key of the answer, and changes no prototype.
    const options = JSON.parse('{"__proto__": {"admin": true}, "maxTokens": 2}') as Record<string, unknown>;
    const wired = toWire({ harnessOptions: options }) as { harness_options: Record<string, unknown> };
    expect(Object.keys(wired.harness_options)).toEqual(["__proto__", "max_tokens"]);
    expect((wired.harness_options as { admin?: boolean }).admin).toBeUndefined();
    expect(Object.getPrototypeOf(wired.harness_options)).toBe(Object.prototype);
  });

  it("must match the contract at build time: npm run typecheck fails if any @ts-expect-error below stops being an error", () => {
    const org = { id: "org_1", name: "Acme", slug: "acme", defaultKeyRpm: null, defaultKeyTpm: null, createdAt: 1, budget: null, budgetSpent: null };
    const { createdAt: _dropped, ...withoutCreatedAt } = org;
    // A relay value missing a field the contract names cannot be an answer.
    // @ts-expect-error created_at is missing
    const incomplete: Org = toWire(withoutCreatedAt);
    const complete: Org = toWire(org);
    // A client cannot read a field the contract does not name.
    // @ts-expect-error the contract says default_key_rpm
    const misspelt = (o: Org) => o.defaultKeyRpm;
    // The relay cannot leave out a route of the contract.
    // @ts-expect-error "PATCH /admin/v1/orgs/:org" has no handler
    const handlers: RouteHandlers<OrgRoute, null> = { "GET /admin/v1/orgs": () => toWire({ object: "list" as const, data: [org] }), "POST /admin/v1/orgs": () => complete };
    // A call must give a route's path parameters and body.
    // @ts-expect-error the route needs params.id
    const call: AdminCallArgs<"GET /admin/v1/machines/:id"> = [];
    // A call cannot send a field its route does not take, when the body is written at the call (an object built
    // elsewhere and passed whole is checked only by the relay: TypeScript compares it structurally).
    const callRoute = <K extends AdminRoute>(_route: K, ..._args: AdminCallArgs<K>) => undefined;
    // @ts-expect-error rmp is not a field of the route: rpm is
    const typo = () => callRoute("POST /admin/v1/keys", { body: { org: "default", name: "typo", rmp: 5 } });
    // What each would do at run time, had it compiled: a page showing nothing where a value belongs, a 404.
    expect(incomplete.created_at).toBeUndefined();
    expect(complete.created_at).toBe(1);
    expect(misspelt(complete)).toBeUndefined();
    expect(Object.keys(handlers)).not.toContain("PATCH /admin/v1/orgs/:org");
    expect(call).toEqual([]);
    expect(typo()).toBeUndefined();
  });
});
