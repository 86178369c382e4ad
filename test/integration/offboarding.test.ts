import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../proto/index.js";
import { createApiKey } from "../../relay/keys/index.js";
import { startTestGateway, type TestGateway } from "../helpers/test-gateway.js";
import { sseEvents, WebClient } from "../helpers/web-client.js";

interface User {
  id: string;
  login: string;
  role: "admin" | "member";
  disabled_at: number | null;
}
interface AuditEvent {
  id: string;
  at: number;
  action: string;
  outcome: string;
  actor: { kind: string; id: string | null; login: string | null };
  address: string | null;
  target: { kind: string; id: string; name: string | null } | null;
  detail: Record<string, unknown> | null;
}

const PASSWORD = "correct horse battery";

// Offboarding people (issue 20, point 7) and the audit log (point 8), through the admin API as the web
// application and the CLI call it. The stacks are served by the stand-in runtime: what is tested is who may call.
describe("offboarding people, and the audit log", () => {
  let gw: TestGateway;
  let origin: string;
  const logLines: Record<string, unknown>[] = [];
  const operator = (method: string, path: string, body?: unknown) =>
    fetch(`${origin}${path}`, { method, headers: { authorization: `Bearer ${gw.relay.adminToken}`, "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
  const addUser = async (login: string, role: "admin" | "member"): Promise<User> => {
    const res = await operator("POST", "/admin/v1/users", { org: gw.orgId, login, role, password: PASSWORD });
    expect(res.status, await res.clone().text()).toBe(201);
    return (await res.json()) as User;
  };
  const signedIn = async (login: string, password = PASSWORD) => {
    const c = new WebClient(origin);
    const res = await c.signIn(login, password);
    expect(res.status, await res.clone().text()).toBe(200);
    return c;
  };
  /** A key made by a signed-in user; returns its secret. */
  const keyOf = async (c: WebClient, name: string) => (await c.json<{ key: string }>("POST", "/admin/v1/keys", { name })).key;
  /** What the gateway answers the key: 200, or 401 once it no longer works. */
  const gatewayStatus = async (key: string) => (await fetch(`${gw.baseURL}/models`, { headers: { authorization: `Bearer ${key}` } })).status;
  const errorOf = async (res: Response) => ((await res.json()) as { error: { code: string; param: string | null; message: string } }).error;
  const audit = async (query = "") => (await (await operator("GET", `/admin/v1/audit?org=${gw.orgId}${query}`)).json()) as { data: AuditEvent[]; next: string | null };

  beforeAll(async () => {
    gw = await startTestGateway({ runtime: "fake", log: createLogger({ level: "info", write: (line) => logLines.push(JSON.parse(line) as Record<string, unknown>) }) });
    origin = gw.relay.url;
    await addUser("root@example.com", "admin");
  });
  afterAll(async () => {
    await gw?.close();
  });

  it("disables a user: its session, its live event stream and its keys stop on the next request, and it cannot sign in; enabling restores the keys", async () => {
    const target = await addUser("leaver@example.com", "member");
    const leaver = await signedIn("leaver@example.com");
    const key = await keyOf(leaver, "leaver's key");
    expect(await gatewayStatus(key)).toBe(200);
    const stream = await leaver.call("GET", "/admin/v1/events");
    expect(stream.status).toBe(200);
    const events = sseEvents(stream);

    const admin = await signedIn("root@example.com");
    const disabled = await admin.json<User>("PATCH", `/admin/v1/users/${target.id}`, { disabled: true });
    expect(disabled).toMatchObject({ id: target.id, role: "member", disabled_at: expect.any(Number) });

    // The stream ends (rather than waiting for its keepalive, 15 s), the session is gone, the key answers 401. A
    // machine's periodic report announced just before may come first; nothing of the keys or the people does.
    const ended = (async () => {
      for (let e = await events.next(); !e.done; e = await events.next()) expect(["machine", "stack"]).toContain(e.value.event);
      return true;
    })();
    let timer: NodeJS.Timeout | undefined;
    expect(await Promise.race([ended, new Promise((resolve) => (timer = setTimeout(() => resolve(false), 10_000)))]).finally(() => clearTimeout(timer))).toBe(true);
    expect((await leaver.call("GET", "/admin/v1/machines")).status).toBe(401);
    expect(await gatewayStatus(key)).toBe(401);
    const refused = await new WebClient(origin).signIn("leaver@example.com", PASSWORD);
    expect(refused.status).toBe(401);
    expect((await errorOf(refused)).message).toBe("This account is disabled; ask an admin of your organization.");
    // A wrong password is told nothing about the account.
    expect((await errorOf(await new WebClient(origin).signIn("leaver@example.com", "not the password"))).message).toBe("The login or password is not right.");
    expect((await admin.json<{ data: User[] }>("GET", "/admin/v1/users")).data.find((u) => u.id === target.id)?.disabled_at).toEqual(expect.any(Number));

    await admin.json("PATCH", `/admin/v1/users/${target.id}`, { disabled: false });
    expect(await gatewayStatus(key)).toBe(200);
    expect((await new WebClient(origin).signIn("leaver@example.com", PASSWORD)).status).toBe(200);
  });

  it("changes a role and resets a password, each ending the user's sessions; the new password works and the old does not", async () => {
    const target = await addUser("mover@example.com", "member");
    const mover = await signedIn("mover@example.com");
    const admin = await signedIn("root@example.com");

    expect(await admin.json<User>("PATCH", `/admin/v1/users/${target.id}`, { role: "admin" })).toMatchObject({ role: "admin", disabled_at: null });
    expect((await mover.call("GET", "/auth/v1/session")).status).toBe(401);
    const promoted = await signedIn("mover@example.com");
    expect((await promoted.json<{ user: { role: string } }>("GET", "/auth/v1/session")).user.role).toBe("admin");

    const reset = await admin.call("POST", `/admin/v1/users/${target.id}/reset-password`, { password: "a brand new password" });
    expect(reset.status).toBe(200);
    expect((await promoted.call("GET", "/auth/v1/session")).status).toBe(401);
    expect((await new WebClient(origin).signIn("mover@example.com", PASSWORD)).status).toBe(401);
    expect((await new WebClient(origin).signIn("mover@example.com", "a brand new password")).status).toBe(200);
    // Too short a password is refused as at creation.
    const short = await admin.call("POST", `/admin/v1/users/${target.id}/reset-password`, { password: "short" });
    expect([short.status, (await errorOf(short)).param]).toEqual([400, "password"]);
  });

  it("deletes a user: its sessions end, its keys are revoked, and its login is free again", async () => {
    const target = await addUser("gone@example.com", "member");
    const gone = await signedIn("gone@example.com");
    const [first, second] = [await keyOf(gone, "one"), await keyOf(gone, "two")];
    const admin = await signedIn("root@example.com");

    const res = await admin.call("DELETE", `/admin/v1/users/${target.id}`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ id: target.id, deleted: true, keys_revoked: 2 });
    expect(await gatewayStatus(first)).toBe(401);
    expect(await gatewayStatus(second)).toBe(401);
    expect((await gone.call("GET", "/admin/v1/keys")).status).toBe(401);
    expect((await admin.json<{ data: User[] }>("GET", "/admin/v1/users")).data.map((u) => u.id)).not.toContain(target.id);
    expect((await admin.call("DELETE", `/admin/v1/users/${target.id}`)).status).toBe(404);
    // A key the user's last request was still making, written after its keys were revoked: never served.
    const late = await createApiKey(gw.relay.store, { orgId: gw.orgId, name: "late", createdBy: target.id });
    expect(await gatewayStatus(late.key)).toBe(401);
    await addUser("gone@example.com", "member");
  });

  it("keeps every organization with an enabled admin, and nobody offboards itself; members and other organizations cannot", async () => {
    const admin = await signedIn("root@example.com");
    const self = (await admin.json<{ user: { id: string } }>("GET", "/auth/v1/session")).user.id;
    for (const [method, body] of [
      ["PATCH", { disabled: true }],
      ["PATCH", { role: "member" }],
      ["DELETE", undefined],
    ] as const) {
      const res = await admin.call(method, `/admin/v1/users/${self}`, body);
      expect([res.status, (await errorOf(res)).code]).toEqual([403, "permission_denied"]);
    }
    const ownReset = await admin.call("POST", `/admin/v1/users/${self}/reset-password`, { password: "another long password" });
    expect(ownReset.status).toBe(403);

    // The operator may act on anyone, but not leave the organization without an enabled admin.
    const users = ((await (await operator("GET", `/admin/v1/users?org=${gw.orgId}`)).json()) as { data: User[] }).data;
    const admins = users.filter((u) => u.role === "admin" && u.disabled_at === null);
    for (const other of admins.filter((u) => u.id !== self)) expect((await operator("PATCH", `/admin/v1/users/${other.id}`, { role: "member" })).status).toBe(200);
    for (const [method, body] of [
      ["PATCH", { disabled: true }],
      ["PATCH", { role: "member" }],
      ["DELETE", undefined],
    ] as const) {
      const res = await operator(method, `/admin/v1/users/${self}`, body);
      expect([res.status, (await errorOf(res)).message]).toEqual([409, "'root@example.com' is the organization's only enabled admin: make another user an admin first."]);
    }
    for (const other of admins.filter((u) => u.id !== self)) expect((await operator("PATCH", `/admin/v1/users/${other.id}`, { role: "admin" })).status).toBe(200);

    const member = await addUser("plain@example.com", "member");
    const plain = await signedIn("plain@example.com");
    const denied = await plain.call("PATCH", `/admin/v1/users/${self}`, { disabled: true });
    expect([denied.status, (await errorOf(denied)).code]).toEqual([403, "permission_denied"]);
    expect((await plain.call("GET", `/admin/v1/audit`)).status).toBe(403);
    expect((await admin.call("PATCH", `/admin/v1/users/${member.id}`, {})).status).toBe(400);
    expect((await admin.call("PATCH", `/admin/v1/users/${member.id}`, { role: "owner" })).status).toBe(400);

    // Someone of another organization reads as not found.
    const other = (await (await operator("POST", "/admin/v1/orgs", { name: "Elsewhere" })).json()) as { id: string };
    await operator("POST", "/admin/v1/users", { org: other.id, login: "boss@elsewhere.example", role: "admin", password: PASSWORD });
    const boss = await signedIn("boss@elsewhere.example");
    expect((await boss.call("PATCH", `/admin/v1/users/${member.id}`, { disabled: true })).status).toBe(404);
    expect((await boss.call("DELETE", `/admin/v1/users/${member.id}`)).status).toBe(404);
    expect((await boss.call("POST", `/admin/v1/users/${member.id}/reset-password`, { password: "a password of theirs" })).status).toBe(404);
    // Nor its audit log.
    expect((await boss.call("GET", `/admin/v1/audit?org=${gw.orgId}`)).status).toBe(404);
    expect((await boss.json<{ data: AuditEvent[] }>("GET", "/admin/v1/audit")).data.every((e) => e.target?.id !== member.id)).toBe(true);
  });

  it("holds a member's keys to the organization's default limits", async () => {
    expect((await operator("PATCH", `/admin/v1/orgs/${gw.orgId}`, { default_key_rpm: 60, default_key_tpm: 10_000 })).status).toBe(200);
    try {
      await addUser("capped@example.com", "member");
      const member = await signedIn("capped@example.com");
      const over = await member.call("POST", "/admin/v1/keys", { name: "greedy", rpm: 61 });
      expect([over.status, await errorOf(over)]).toEqual([403, expect.objectContaining({ code: "permission_denied", param: "rpm", message: expect.stringContaining("at most 60 requests a minute") })]);
      expect((await member.call("POST", "/admin/v1/keys", { name: "greedy", tpm: 20_000 })).status).toBe(403);
      expect((await member.call("POST", "/admin/v1/keys", { name: "fair", rpm: 30, tpm: 10_000 })).status).toBe(201);
      expect((await member.call("POST", "/admin/v1/keys", { name: "default" })).status).toBe(201);
      const admin = await signedIn("root@example.com");
      expect((await admin.call("POST", "/admin/v1/keys", { name: "big", rpm: 6000 })).status).toBe(201);
    } finally {
      await operator("PATCH", `/admin/v1/orgs/${gw.orgId}`, { default_key_rpm: null, default_key_tpm: null });
    }
  });

  it("records each security-relevant action with who, what, when and from where, in the database and as one JSON log line", async () => {
    const started = Date.now();
    await addUser("audited@example.com", "member");
    await new WebClient(origin).signIn("audited@example.com", "wrong password!");
    await new WebClient(origin).signIn("nobody-at-all", PASSWORD);
    const admin = await signedIn("root@example.com");
    const user = (await admin.json<{ data: User[] }>("GET", "/admin/v1/users")).data.find((u) => u.login === "audited@example.com")!;
    await admin.json("PATCH", `/admin/v1/users/${user.id}`, { disabled: true });
    await admin.json("PATCH", `/admin/v1/users/${user.id}`, { disabled: false, role: "admin" });
    await admin.json("POST", `/admin/v1/users/${user.id}/reset-password`, { password: "yet another password" });
    const key = await admin.json<{ id: string; key: string }>("POST", "/admin/v1/keys", { name: "audited key", rpm: 10 });
    await admin.json("POST", `/admin/v1/keys/${key.id}/revoke`);
    const machine = await admin.json<{ id: string }>("POST", "/admin/v1/machines", { name: "audited-machine" });
    await admin.json("POST", `/admin/v1/machines/${machine.id}/rotate-token`);
    await admin.json("POST", `/admin/v1/machines/${machine.id}/revoke`);
    const stack = await admin.json<{ id: string }>("POST", "/admin/v1/stacks", { name: "audited-stack", machine: gw.machineId, runtime: "openai", model: "http://fake.invalid/v1#audited" });
    await admin.json("POST", `/admin/v1/stacks/${stack.id}/deploy`);
    await expect.poll(async () => (await admin.json<{ state: string }>("GET", `/admin/v1/stacks/${stack.id}`)).state, { timeout: 30_000 }).toBe("deployed");
    await admin.json("POST", `/admin/v1/stacks/${stack.id}/undeploy`);
    await admin.json("PATCH", `/admin/v1/orgs/${gw.orgId}`, { default_key_rpm: 100 });
    await admin.json("PATCH", `/admin/v1/orgs/${gw.orgId}`, { default_key_rpm: null });
    await admin.json("DELETE", `/admin/v1/users/${user.id}`);

    const { data } = await audit("&limit=500");
    const mine = data.filter((e) => e.at >= started).reverse();
    const rootActor = { kind: "user", id: expect.stringMatching(/^user_/), login: "root@example.com" };
    const expected: [string, string, unknown, unknown][] = [
      ["user.created", "success", { kind: "operator", id: null, login: null }, { kind: "user", id: user.id, name: "audited@example.com" }],
      ["sign_in", "failure", { kind: "user", id: user.id, login: "audited@example.com" }, null],
      ["sign_in", "success", rootActor, null],
      ["user.disabled", "success", rootActor, { kind: "user", id: user.id, name: "audited@example.com" }],
      ["user.role_changed", "success", rootActor, { kind: "user", id: user.id, name: "audited@example.com" }],
      ["user.enabled", "success", rootActor, { kind: "user", id: user.id, name: "audited@example.com" }],
      ["user.password_reset", "success", rootActor, { kind: "user", id: user.id, name: "audited@example.com" }],
      ["key.created", "success", rootActor, { kind: "key", id: key.id, name: "audited key" }],
      ["key.revoked", "success", rootActor, { kind: "key", id: key.id, name: "audited key" }],
      ["machine.created", "success", rootActor, { kind: "machine", id: machine.id, name: "audited-machine" }],
      ["machine.token_rotated", "success", rootActor, { kind: "machine", id: machine.id, name: "audited-machine" }],
      ["machine.revoked", "success", rootActor, { kind: "machine", id: machine.id, name: "audited-machine" }],
      ["stack.created", "success", rootActor, { kind: "stack", id: stack.id, name: "audited-stack" }],
      ["stack.deployed", "success", rootActor, { kind: "stack", id: stack.id, name: "audited-stack" }],
      ["stack.undeployed", "success", rootActor, { kind: "stack", id: stack.id, name: "audited-stack" }],
      ["org.limits_changed", "success", rootActor, { kind: "org", id: gw.orgId, name: "Test Org" }],
      ["org.limits_changed", "success", rootActor, { kind: "org", id: gw.orgId, name: "Test Org" }],
      ["user.deleted", "success", rootActor, { kind: "user", id: user.id, name: "audited@example.com" }],
    ];
    expect(mine.map((e) => [e.action, e.outcome, e.actor, e.target])).toEqual(expected);
    for (const e of mine) expect(e.address).toMatch(/^(::ffff:)?127\.0\.0\.1$/);
    expect(mine.find((e) => e.action === "sign_in" && e.outcome === "failure")!.detail).toEqual({ reason: "wrong password" });
    expect(mine.find((e) => e.action === "key.created")!.detail).toEqual({ rpm: 10, tpm: null, stacks: null, machines: null, expires_at: null, service_tier: "default", budget: null });
    expect(mine.find((e) => e.action === "user.role_changed")!.detail).toEqual({ from: "member", to: "admin" });
    // A sign-in to a login that does not exist belongs to no organization: in the log only.
    expect(data.some((e) => e.actor.login === "nobody-at-all")).toBe(false);
    const lines = logLines.filter((l) => l.msg === "audit");
    expect(lines.find((l) => (l.actor as { login?: string }).login === "nobody-at-all")).toMatchObject({ action: "sign_in", outcome: "failure", org: null, detail: { reason: "unknown login" } });
    expect(lines.filter((l) => l.org === gw.orgId && (l.target as { id?: string } | null)?.id === user.id).map((l) => l.action)).toEqual(mine.filter((e) => e.target?.id === user.id).map((e) => e.action));
    // Nothing secret in what is recorded.
    expect(JSON.stringify(data) + JSON.stringify(lines)).not.toMatch(/yet another password|mk_live_|correct horse/);
  });

  it("pages the audit log newest first, and filters it by action or family", async () => {
    const first = await audit("&limit=3");
    expect(first.data).toHaveLength(3);
    expect(first.next).toBe(first.data[2]!.id);
    const second = await audit(`&limit=3&before=${first.next}`);
    const all = (await audit("&limit=500")).data;
    expect([...first.data, ...second.data].map((e) => e.id)).toEqual(all.slice(0, 6).map((e) => e.id));
    for (let i = 1; i < all.length; i++) expect(all[i - 1]!.at).toBeGreaterThanOrEqual(all[i]!.at);

    const machines = (await audit("&action=machine")).data;
    expect(new Set(machines.map((e) => e.action))).toEqual(new Set(["machine.created", "machine.token_rotated", "machine.revoked"]));
    const disabledOnly = (await audit("&action=user.disabled")).data;
    expect(disabledOnly.length).toBeGreaterThan(0);
    expect(disabledOnly.every((e) => e.action === "user.disabled")).toBe(true);
    for (const bad of ["&limit=0", "&limit=501", "&limit=x", "&action=nonsense", "&before=../../etc"]) {
      const res = await operator("GET", `/admin/v1/audit?org=${gw.orgId}${bad}`);
      expect([bad, res.status, (await errorOf(res)).code]).toEqual([bad, 400, "invalid_value"]);
    }
  });
});
