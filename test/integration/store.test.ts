import pg from "pg";
import { afterAll, describe, expect, it, vi } from "vitest";
import { MIGRATIONS } from "../../relay/store/migrations.js";
import { openStore, type DatabaseLocation, type Store, type StoreChange, type User } from "../../relay/store/index.js";
import { DIALECTS, emptyDatabase } from "../helpers/databases.js";

const HARDWARE = { platform: "linux", os: "Debian 12", arch: "x64", cpuModel: "cpu", cpuPhysicalCores: 2, cpuLogicalCores: 2, memoryBytes: 24 * 2 ** 30, gpus: [], disks: [], accelerators: [] };

// One store implementation, one migration history: the same checks on SQLite and on a real PostgreSQL server.
describe.each(DIALECTS)("the relay's store on %s", (dialect) => {
  const opened: Store[] = [];
  const open = async (location: DatabaseLocation) => {
    const store = await openStore(location);
    opened.push(store);
    return store;
  };
  afterAll(async () => {
    for (const s of opened) await s.close();
  });

  it("migrates an empty database once, and opening it again changes nothing", async () => {
    const location = await emptyDatabase(dialect);
    const first = await open(location);
    expect([first.dialect, first.migrated]).toEqual([dialect, MIGRATIONS.length]);
    await first.close();
    const again = await open(location);
    expect(again.migrated).toBe(0);
    expect(await again.orgs.list()).toEqual([]);
  });

  it("keeps organizations, with unique slugs and their default key limits", async () => {
    const store = await open(await emptyDatabase(dialect));
    const acme = (await store.orgs.create("Acme Labs"))!;
    expect(acme.slug).toBe("acme-labs");
    expect(await store.orgs.create("Acme labs")).toBeNull();
    expect(await store.orgs.find("acme-labs")).toEqual(acme);
    expect(await store.orgs.find(acme.id)).toEqual(acme);
    await store.orgs.setDefaultKeyLimits(acme.id, { rpm: 5, tpm: 5_000_000_000 });
    expect(await store.orgs.find(acme.id)).toMatchObject({ defaultKeyRpm: 5, defaultKeyTpm: 5_000_000_000 });
    expect((await store.orgs.list()).map((o) => o.slug)).toEqual(["acme-labs"]);
  });

  it("reads times of today (beyond 32 bits) back as the numbers written", async () => {
    const store = await open(await emptyDatabase(dialect));
    const now = Date.now();
    const org = (await store.orgs.create("Clock", "clock", now))!;
    expect((await store.orgs.find(org.id))!.createdAt).toBe(now);
    const machine = await store.machines.create({ orgId: org.id, name: "m", tokenHash: "h" }, now);
    await store.machines.markOnline(machine.id, { hardware: HARDWARE, agentVersion: "1.2.3" }, now + 1);
    const m = (await store.machines.get(machine.id))!;
    expect([typeof m.createdAt, m.createdAt, m.lastSeenAt, m.state, m.hardware]).toEqual(["number", now, now + 1, "online", HARDWARE]);
  });

  it("keeps machines: state, token hash, revocation", async () => {
    const store = await open(await emptyDatabase(dialect));
    const org = (await store.orgs.create("M"))!;
    const machine = await store.machines.create({ orgId: org.id, name: "gpu-1", tokenHash: "hash-1" });
    expect(machine).toMatchObject({ state: "pending", hardware: null, revokedAt: null });
    expect(await store.machines.tokenHash(machine.id)).toBe("hash-1");
    await store.machines.markOnline(machine.id, { hardware: HARDWARE, agentVersion: "1" });
    await store.machines.markOffline(machine.id);
    expect((await store.machines.get(machine.id))!.state).toBe("offline");
    await store.machines.revoke(machine.id, "unmatchable", 1234);
    await store.machines.revoke(machine.id, "unmatchable-2", 5678);
    expect((await store.machines.get(machine.id))!.revokedAt).toBe(1234);
    expect(await store.machines.tokenHash(machine.id)).toBe("unmatchable-2");
    expect((await store.machines.listByOrg(org.id)).map((m) => m.name)).toEqual(["gpu-1"]);
  });

  it("batches what links read and write across machines, in few statements, each machine ending as its last write left it", async () => {
    const store = await open(await emptyDatabase(dialect));
    const org = (await store.orgs.create("Fleet"))!;
    const machines = await Promise.all(Array.from({ length: 600 }, (_, i) => store.machines.create({ orgId: org.id, name: `m${i}`, tokenHash: `hash-${i}` })));
    const stack = await store.stacks.create({ orgId: org.id, name: "s", machineId: machines[7]!.id, runtime: "gguf", modelRef: "/m.gguf", modelId: "m", hasEndpoint: true });
    const statements = vi.spyOn(store.db.getExecutor(), "executeQuery");
    const now = Date.now();
    // What 600 machines linking at once ask for, as they would: in one turn of the event loop.
    const [found, stacks] = await Promise.all([
      Promise.all([...machines.map((m) => store.machines.getForLink(m.id)), store.machines.getForLink("mach_unknown")]),
      Promise.all(machines.map((m) => store.stacks.listByMachine(m.id))),
    ]);
    expect(found.slice(0, 600).map((f) => [f!.machine.name, f!.tokenHash])).toEqual(machines.map((_, i) => [`m${i}`, `hash-${i}`]));
    expect(found[600]).toBeUndefined();
    expect(stacks.map((s) => s.map((st) => st.id))).toEqual(machines.map((_, i) => (i === 7 ? [stack.id] : [])));
    const reads = statements.mock.calls.length;
    // At most 500 keys a statement: two for the machines, two for their stacks.
    expect(reads).toBe(4);
    await Promise.all(
      machines.flatMap((m, i) => [
        store.machines.markOnline(m.id, { hardware: { ...HARDWARE, cpuModel: `cpu-${i}` }, agentVersion: `v${i}` }, now + i),
        store.machines.setInventory(m.id, { runtimes: [], models: [{ name: `model-${i}`, format: "gguf", sizeBytes: i, path: `/m/${i}.gguf`, sha256: "", stackIds: [] }], memory: null }),
        // Every third machine's link closes again at once: offline, whatever was batched with it.
        ...(i % 3 === 0 ? [store.machines.markOffline(m.id, now + 10_000)] : []),
      ]),
    );
    // Runs of one kind of write, at most 500 writes a batch: far fewer statements than the 1,400 writes.
    expect(statements.mock.calls.length - reads).toBeLessThanOrEqual(12);
    const after = new Map((await store.machines.listByOrg(org.id)).map((m) => [m.id, m]));
    machines.forEach((m, i) => {
      const got = after.get(m.id)!;
      expect([got.state, got.hardware?.cpuModel, got.agentVersion, got.lastSeenAt, got.inventory?.models[0]?.name]).toEqual([
        i % 3 === 0 ? "offline" : "online",
        `cpu-${i}`,
        `v${i}`,
        i % 3 === 0 ? now + 10_000 : now + i,
        `model-${i}`,
      ]);
    });
    statements.mockRestore();
  });

  it("moves stacks only along their state machine, and announces what changes routing", async () => {
    const store = await open(await emptyDatabase(dialect));
    const changes: StoreChange[] = [];
    store.notices.listen((c) => void changes.push(c));
    const org = (await store.orgs.create("S"))!;
    const machine = await store.machines.create({ orgId: org.id, name: "m", tokenHash: "h" });
    const stack = await store.stacks.create({
      orgId: org.id, name: "s", machineId: machine.id, runtime: "gguf", modelRef: "/m.gguf", modelId: "m", hasEndpoint: true, harness: "system-prompt", harnessOptions: { prompt: "Be brief." },
    });
    expect(stack).toMatchObject({ state: "draft", hasEndpoint: true, harnessOptions: { prompt: "Be brief." }, orchestratorOptions: {} });
    await expect(store.stacks.transition(stack.id, "deployed")).rejects.toMatchObject({ code: "conflict" });
    await store.stacks.transition(stack.id, "deploying");
    expect(await store.stacks.serving(org.id)).toEqual([]);
    const deployed = await store.stacks.transition(stack.id, "deployed", { contextSize: 4096 }, 42);
    expect(deployed).toMatchObject({ state: "deployed", contextSize: 4096, deployedAt: 42 });
    expect((await store.stacks.serving(org.id)).map((s) => s.id)).toEqual([stack.id]);
    expect((await store.stacks.serving()).map((s) => s.id)).toEqual([stack.id]);
    expect(changes).toContainEqual({ kind: "stacks", orgId: org.id });
    await store.stacks.setRuntimeState(stack.id, "failed", "out of memory");
    expect(await store.stacks.get(stack.id)).toMatchObject({ runtimeState: "failed", runtimeError: "out of memory" });
    await expect(store.stacks.transition("stk_nope", "deploying")).rejects.toMatchObject({ code: "not_found" });
  });

  it("lets only one of two writers move a stack from the state both read", async () => {
    const location = await emptyDatabase(dialect);
    const a = await open(location);
    const b = await open(location);
    const org = (await a.orgs.create("Race"))!;
    const machine = await a.machines.create({ orgId: org.id, name: "m", tokenHash: "h" });
    const stack = await a.stacks.create({ orgId: org.id, name: "s", machineId: machine.id, runtime: "gguf", modelRef: "/m.gguf", modelId: "m", hasEndpoint: true });
    const results = await Promise.allSettled([a.stacks.transition(stack.id, "deploying"), b.stacks.transition(stack.id, "deploying")]);
    expect(results.map((r) => r.status).sort()).toEqual(["fulfilled", "rejected"]);
    expect((results.find((r) => r.status === "rejected") as PromiseRejectedResult).reason).toMatchObject({ code: "conflict" });
  });

  it("records deployments and their steps, and finds each stack's latest", async () => {
    const store = await open(await emptyDatabase(dialect));
    const org = (await store.orgs.create("D"))!;
    const machine = await store.machines.create({ orgId: org.id, name: "m", tokenHash: "h" });
    const stack = await store.stacks.create({ orgId: org.id, name: "s", machineId: machine.id, runtime: "gguf", modelRef: "/m.gguf", modelId: "m", hasEndpoint: true });
    const first = await store.deployments.start(stack.id, ["install_runtime", "pull_model"], 1000);
    await store.deployments.finish(first, "no disk");
    const second = await store.deployments.start(stack.id, ["install_runtime", "pull_model"], 1000);
    await store.deployments.stepRunning(second, 0);
    await store.deployments.stepDetail(second, 0, { stage: "download", doneBytes: 10 });
    await store.deployments.stepFinished(second, 0, null);
    await store.deployments.stepFinished(second, 1, "checksum mismatch");
    const latest = (await store.deployments.latest(stack.id))!;
    expect(latest.id).toBe(second);
    expect(latest.steps.map((s) => [s.seq, s.kind, s.state, s.error])).toEqual([
      [0, "install_runtime", "succeeded", null],
      [1, "pull_model", "failed", "checksum mismatch"],
    ]);
    expect(latest.steps[0]!.detail).toEqual({ stage: "download", doneBytes: 10 });
    expect((await store.deployments.latestOf([stack.id, "stk_none"])).size).toBe(1);
  });

  it("keeps API keys by hash, revokes them for good, and writes last use in batches", async () => {
    const store = await open(await emptyDatabase(dialect));
    const org = (await store.orgs.create("K"))!;
    const changes: StoreChange[] = [];
    store.notices.listen(async (c) => {
      await new Promise((r) => setTimeout(r, 5));
      changes.push(c);
    });
    const key = await store.keys.insert({ orgId: org.id, name: "ci", prefix: "mk_live_AbCd", keyHash: "hash-k", stackIds: ["stk_1"], machineIds: null, rpm: 5, tpm: null, createdBy: null });
    // The write answers only once its listeners are done.
    expect(changes).toEqual([{ kind: "key", keyId: key.id }]);
    expect(await store.keys.findByHash("hash-k")).toMatchObject({ id: key.id, stackIds: ["stk_1"], machineIds: null, rpm: 5, state: "active" });
    store.keys.touch(key.id, 1_700_000_000_123);
    expect((await store.keys.get(key.id))!.lastUsedAt).toBe(1_700_000_000_123);
    expect((await store.keys.listActive(org.id)).map((k) => k.id)).toEqual([key.id]);
    const revoked = (await store.keys.revoke(key.id, 77))!;
    expect([revoked.state, revoked.revokedAt]).toEqual(["revoked", 77]);
    expect(changes).toHaveLength(2);
    expect(await store.keys.listActive()).toEqual([]);
    expect(await store.keys.revoke("key_none")).toBeUndefined();
  });

  it("pages an organization's keys in the database: searched, filtered by state, sorted with nothing last, with the last day's use", async () => {
    const store = await open(await emptyDatabase(dialect));
    const org = (await store.orgs.create("Paged"))!;
    const other = (await store.orgs.create("Other"))!;
    const NOW = 1_800_000_000_000;
    const make = (name: string | null, at: number, extra: { expiresAt?: number } = {}) =>
      store.keys.insert({ orgId: org.id, name, prefix: `mk_live_${at}`, keyHash: `hash-${at}`, stackIds: null, machineIds: null, rpm: null, tpm: null, createdBy: null, ...extra }, at);
    const alpha = await make("Alpha", 1);
    const beta = await make("beta", 2);
    const unnamed = await make(null, 3);
    await make("100% off_sale", 4);
    await make("Gamma", 5, { expiresAt: NOW - 1 });
    const later = await make("delta", 6, { expiresAt: NOW + 60_000 });
    await store.keys.revoke(beta.id, 7);
    await store.keys.insert({ orgId: other.id, name: "Alpha elsewhere", prefix: "mk_live_x", keyHash: "hash-x", stackIds: null, machineIds: null, rpm: null, tpm: null, createdBy: null }, 8);
    store.keys.touch(alpha.id, NOW - 10);
    // Use: delta the busiest, then alpha; use before the day does not count.
    const minute = Math.floor(NOW / 60_000) * 60_000;
    await store.db
      .insertInto("usage_minutes")
      .values([
        { org_id: org.id, key_id: later.id, model: "m", minute, requests: 5, errors: 0, prompt_tokens: 10, completion_tokens: 20 },
        { org_id: org.id, key_id: alpha.id, model: "m", minute, requests: 2, errors: 1, prompt_tokens: 1, completion_tokens: 1 },
        { org_id: org.id, key_id: alpha.id, model: "n", minute: minute - 2 * 86_400_000, requests: 90, errors: 0, prompt_tokens: 9, completion_tokens: 9 },
      ])
      .execute();
    const ask = { order: "asc" as "asc" | "desc", offset: 0, limit: 50, now: NOW, usageSince: minute - 86_400_000 };
    const names = async (more: Partial<typeof ask> & { q?: string; state?: "active" | "revoked" | "expired"; sort?: Parameters<typeof store.keys.page>[1]["sort"] }) =>
      (await store.keys.page(org.id, { ...ask, ...more })).keys.map((k) => k.name);

    // The list's own order, oldest first (or newest), another organization's never in it.
    expect(await names({})).toEqual(["Alpha", "beta", null, "100% off_sale", "Gamma", "delta"]);
    expect(await names({ order: "desc" })).toEqual(["delta", "Gamma", "100% off_sale", null, "beta", "Alpha"]);
    // Names by their letters whatever their case; nothing last, either way.
    expect(await names({ sort: "name" })).toEqual(["100% off_sale", "Alpha", "beta", "delta", "Gamma", null]);
    expect(await names({ sort: "name", order: "desc" })).toEqual(["Gamma", "delta", "beta", "Alpha", "100% off_sale", null]);
    expect(await names({ sort: "last_used_at" })).toEqual(["Alpha", "beta", null, "100% off_sale", "Gamma", "delta"]);
    expect(await names({ sort: "expires_at", order: "desc" })).toEqual(["delta", "Gamma", "Alpha", "beta", null, "100% off_sale"]);
    // State as the API shows it: expired is an active key past its expiry.
    expect(await names({ state: "expired" })).toEqual(["Gamma"]);
    expect(await names({ state: "active" })).toEqual(["Alpha", null, "100% off_sale", "delta"]);
    expect(await names({ state: "revoked" })).toEqual(["beta"]);
    expect(await names({ sort: "state" })).toEqual(["Alpha", null, "100% off_sale", "delta", "Gamma", "beta"]);
    // Every word found, in any case, in the name, prefix or id; LIKE's own characters are plain.
    expect(await names({ q: "ALP" })).toEqual(["Alpha"]);
    expect(await names({ q: "100%" })).toEqual(["100% off_sale"]);
    expect(await names({ q: "f_s" })).toEqual(["100% off_sale"]);
    expect(await names({ q: "mk_live_5" })).toEqual(["Gamma"]);
    expect(await names({ q: `${unnamed.id} mk_live` })).toEqual([null]);
    expect(await names({ q: "alpha beta" })).toEqual([]);
    // The last day's use, for the page's keys; sorted by it, the busiest first.
    const page = await store.keys.page(org.id, { ...ask, limit: 2 });
    expect([page.total, page.keys.map((k) => [k.name, k.requests, k.tokens])]).toEqual([
      6,
      [
        ["Alpha", 2, 2],
        ["beta", 0, 0],
      ],
    ]);
    const busiest = await store.keys.page(org.id, { ...ask, sort: "requests_24h", order: "desc", offset: 0, limit: 3 });
    expect(busiest.keys.map((k) => [k.name, k.requests, k.tokens])).toEqual([
      ["delta", 5, 30],
      ["Alpha", 2, 2],
      ["beta", 0, 0],
    ]);
    expect((await store.keys.page(org.id, { ...ask, sort: "tokens_24h", offset: 4, limit: 10 })).keys.map((k) => k.name)).toEqual(["Alpha", "delta"]);
    const second = await store.keys.page(org.id, { ...ask, sort: "name", offset: 2, limit: 2 });
    expect([second.total, second.keys.map((k) => k.name)]).toEqual([6, ["beta", "delta"]]);

    // Numbers in names sort as numbers, and case folds in any script: the same on both databases.
    const more = (await store.orgs.create("Numbered"))!;
    for (const [i, name] of ["runner-10", "runner-9", "Runner-100", "ÄRGER", "runner-09"].entries()) {
      await store.keys.insert({ orgId: more.id, name, prefix: `mk_live_n${i}`, keyHash: `hash-n${i}`, stackIds: null, machineIds: null, rpm: null, tpm: null, createdBy: null }, 100 + i);
    }
    const numbered = async (more2: { q?: string; order?: "asc" | "desc" }) => (await store.keys.page(more.id, { ...ask, sort: "name", ...more2 })).keys.map((k) => k.name);
    expect(await numbered({})).toEqual(["runner-9", "runner-09", "runner-10", "Runner-100", "ÄRGER"]);
    expect(await numbered({ q: "ärger" })).toEqual(["ÄRGER"]);
    expect(await numbered({ q: "Är" })).toEqual(["ÄRGER"]);
    expect(await numbered({ q: "RUNNER-1" })).toEqual(["runner-10", "Runner-100"]);
  });

  it("keeps users, settings and web sessions (expired ones are not returned)", async () => {
    const store = await open(await emptyDatabase(dialect));
    const org = (await store.orgs.create("U"))!;
    const user = (await store.users.create({ orgId: org.id, login: "ada", passwordHash: "scrypt$x", role: "admin" }))!;
    expect(await store.users.findByLogin("ada")).toEqual({ ...user, passwordHash: "scrypt$x" });
    expect(await store.users.create({ orgId: org.id, login: "ada", passwordHash: "y", role: "member" })).toBeNull();
    await store.settings.set("admin_token_hash", "one");
    await store.settings.set("admin_token_hash", "two");
    expect(await store.settings.get("admin_token_hash")).toBe("two");
    await store.sessions.create("s1", { userId: user.id, csrfToken: "c", createdAt: 0, expiresAt: 100 });
    await store.sessions.create("s2", { userId: user.id, csrfToken: "c", createdAt: 0, expiresAt: 10_000 });
    expect(await store.sessions.find("s1", 200)).toBeUndefined();
    expect(await store.sessions.find("s2", 200)).toMatchObject({ userId: user.id });
    await store.sessions.deleteForUser(user.id, "s2");
    expect(await store.sessions.find("s2", 200)).toBeDefined();
    await store.sessions.deleteForUser(user.id);
    expect(await store.sessions.find("s2", 200)).toBeUndefined();
  });

  it("disables, re-roles and deletes users, announcing each change, and a deleted user's sessions go with it", async () => {
    const store = await open(await emptyDatabase(dialect));
    const heard: StoreChange[] = [];
    store.notices.listen((c) => void heard.push(c));
    const org = (await store.orgs.create("Off"))!;
    const user = (await store.users.create({ orgId: org.id, login: "leaver", passwordHash: "h", role: "admin" }))!;
    expect(user.disabledAt).toBeNull();
    const disabled = (await store.users.update(user.id, { disabled: true }, { keepAnAdmin: false }, 1_000)) as User;
    expect(disabled.disabledAt).toBe(1_000);
    // Disabling again keeps the first time.
    expect(((await store.users.update(user.id, { disabled: true }, { keepAnAdmin: false }, 2_000)) as User).disabledAt).toBe(1_000);
    expect(await store.users.disabledIds()).toEqual([user.id]);
    // The organization's only admin, disabled: enabling it is fine, and it cannot be the last one lost again.
    expect(await store.users.update(user.id, { disabled: false }, { keepAnAdmin: true })).toMatchObject({ disabledAt: null });
    expect(await store.users.update(user.id, { role: "member" }, { keepAnAdmin: true })).toBe("last_admin");
    expect(await store.users.delete(user.id, { keepAnAdmin: true })).toBe("last_admin");
    expect(await store.users.update("user_none", { disabled: true }, { keepAnAdmin: true })).toBeUndefined();
    await store.users.update(user.id, { disabled: true }, { keepAnAdmin: false }, 3_000);
    expect(await store.users.update(user.id, { disabled: false }, { keepAnAdmin: false })).toMatchObject({ disabledAt: null });
    expect(await store.users.update(user.id, { role: "member" }, { keepAnAdmin: false })).toMatchObject({ role: "member" });
    await store.sessions.create("s", { userId: user.id, csrfToken: "c", createdAt: 0, expiresAt: 10_000 });
    expect(await store.users.delete(user.id)).toBe(true);
    expect(await store.users.delete(user.id)).toBe(false);
    expect(await store.users.get(user.id)).toBeUndefined();
    expect(await store.sessions.find("s", 1)).toBeUndefined();
    expect(heard.filter((c) => c.kind === "user")).toHaveLength(11);
  });

  it("lets only one of two admins demoting each other at once succeed: the organization keeps an enabled admin", async () => {
    const store = await open(await emptyDatabase(dialect));
    const org = (await store.orgs.create("Two"))!;
    const [a, b] = await Promise.all(["a", "b"].map(async (login) => (await store.users.create({ orgId: org.id, login, passwordHash: "h", role: "admin" }))!));
    // Both read two enabled admins before either writes, as two relays would.
    const results = await Promise.all([
      store.users.update(a!.id, { role: "member" }, { keepAnAdmin: true }),
      store.users.update(b!.id, { disabled: true }, { keepAnAdmin: true }),
    ]);
    expect(results.filter((r) => r === "last_admin")).toHaveLength(1);
    expect((await store.users.listByOrg(org.id)).filter((u) => u.role === "admin" && u.disabledAt === null)).toHaveLength(1);
  });

  it("keeps the audit log: newest first, a page at a time in the order recorded (within a millisecond too), by action, pruned by age", async () => {
    const store = await open(await emptyDatabase(dialect));
    const actor = { kind: "operator" as const, id: null, login: null };
    const made = [];
    for (let i = 0; i < 7; i++) {
      made.push(
        await store.audit.insert({
          orgId: "org_a",
          at: i < 5 ? 5_000 : 6_000 + i,
          action: i % 2 ? "key.created" : "user.disabled",
          outcome: "success",
          actor,
          address: "127.0.0.1",
          target: { kind: "user", id: `user_${i}`, name: null },
          detail: i === 0 ? { role: "admin" } : null,
        }),
      );
    }
    await store.audit.insert({ orgId: "org_b", at: 7_000, action: "sign_in", outcome: "failure", actor: { kind: "anonymous", id: null, login: "x" }, address: null, target: null, detail: null });
    const newestFirst = made.map((e) => e.id).reverse();
    const page1 = await store.audit.list("org_a", { limit: 3 });
    const page2 = await store.audit.list("org_a", { limit: 3, before: page1[2]!.id });
    const page3 = await store.audit.list("org_a", { limit: 3, before: page2[2]!.id });
    expect([...page1, ...page2, ...page3].map((e) => e.id)).toEqual(newestFirst);
    expect(page3.at(-1)).toEqual(made[0]);
    expect((await store.audit.list("org_a", { limit: 10, actions: ["key.created"] })).map((e) => e.target!.id)).toEqual(["user_5", "user_3", "user_1"]);
    expect(await store.audit.list("org_a", { limit: 10, before: "aud_0000000000000000" })).toEqual([]);
    expect(await store.audit.prune(6_000)).toBe(5);
    expect((await store.audit.list("org_a", { limit: 10 })).map((e) => e.id)).toEqual(newestFirst.slice(0, 2));
  });

  it("keeps the request log: newest first, filtered, named, bounded per organization and by age, captures dropped when due", async () => {
    const store = await open(await emptyDatabase(dialect));
    const org = (await store.orgs.create("Acme"))!;
    const key = await store.keys.insert({ orgId: org.id, name: "bot", prefix: "mk_live_abc", keyHash: "hash-bot", stackIds: null, machineIds: null, rpm: null, tpm: null, createdBy: null });
    const row = (i: number, extra: Partial<Parameters<Store["requests"]["insert"]>[0][number]> = {}) => ({
      orgId: org.id, at: 10_000 + i, requestId: `rq${i}`, keyId: key.id, model: "Qwen_2%", stackId: null, machineId: null, stream: false,
      status: 200, errorCode: null, promptTokens: i, completionTokens: 1, latencyMs: 5, firstTokenMs: 2, loadMs: null as number | null, captureJson: null as string | null, captureUntil: null as number | null, ...extra,
    });
    await store.requests.insert([
      row(0),
      row(1, { status: 429, errorCode: "rate_limit_requests", model: "other" }),
      row(2, { errorCode: "stream_incomplete", stream: true }),
      row(3, { captureJson: JSON.stringify({ messages: [{ role: "user", content: "hi" }], answer: "hello", toolCalls: [], truncated: false }), captureUntil: 50_000 }),
      { ...row(4), orgId: "org_other" },
    ]);
    const ids = async (filter: Parameters<Store["requests"]["list"]>[1]) => (await store.requests.list(org.id, filter, { offset: 0, limit: 10 })).rows.map((r) => r.requestId);
    expect(await ids({})).toEqual(["rq3", "rq2", "rq1", "rq0"]);
    expect(await ids({ status: "error" })).toEqual(["rq2", "rq1"]);
    expect(await ids({ status: "ok" })).toEqual(["rq3", "rq0"]);
    expect(await ids({ status: "4xx" })).toEqual(["rq1"]);
    expect(await ids({ status: 200 })).toEqual(["rq3", "rq2", "rq0"]);
    // Words match part of a model any case, LIKE's own characters as themselves; or a request id whole.
    expect(await ids({ q: "n_2%" })).toEqual(["rq3", "rq2", "rq0"]);
    expect(await ids({ q: "n%2" })).toEqual([]);
    expect(await ids({ q: "rq1" })).toEqual(["rq1"]);
    expect(await store.requests.list(org.id, {}, { offset: 1, limit: 2 })).toMatchObject({ total: 4, rows: [{ requestId: "rq2", keyName: "bot", stream: true }, { requestId: "rq1" }] });
    const listed = (await store.requests.list(org.id, {}, { offset: 0, limit: 1 })).rows[0]!;
    expect(listed).toMatchObject({ requestId: "rq3", capture: null, captureUntil: 50_000 });
    expect(await store.requests.get(listed.id)).toMatchObject({ keyName: "bot", capture: { answer: "hello" }, captureUntil: 50_000 });
    // A stack's capture shortened cuts what it kept to the new hours; turned off, drops it.
    await store.requests.insert([row(5, { stackId: "stk_a", captureJson: "{}", captureUntil: 10_005 + 5 * 3_600_000 })]);
    const kept = (await store.requests.list(org.id, { stackId: "stk_a" }, { offset: 0, limit: 1 })).rows[0]!;
    await store.requests.limitCaptures("stk_a", 8);
    expect((await store.requests.get(kept.id))!.captureUntil).toBe(10_005 + 5 * 3_600_000);
    await store.requests.limitCaptures("stk_a", 1);
    expect((await store.requests.get(kept.id))!.captureUntil).toBe(10_005 + 3_600_000);
    await store.requests.limitCaptures("stk_a", null);
    expect(await store.requests.get(kept.id)).toMatchObject({ captureUntil: null, capture: null });
    expect(await store.requests.get(listed.id)).toMatchObject({ captureUntil: 50_000 });
    await store.requests.prune({ before: 0, keepPerOrg: 100, orgs: [], now: 0 });
    expect(await ids({})).toEqual(["rq5", "rq3", "rq2", "rq1", "rq0"]);
    // Captures go when due; each organization keeps its newest; nothing older than the cut-off stays.
    await store.requests.prune({ before: 0, keepPerOrg: 100, orgs: [], now: 50_000 });
    expect(await store.requests.get(listed.id)).toMatchObject({ capture: null, captureUntil: null, status: 200 });
    expect(await store.requests.prune({ before: 0, keepPerOrg: 2, orgs: [org.id], now: 0 })).toBe(3);
    expect(await ids({})).toEqual(["rq5", "rq3"]);
    expect(await store.requests.prune({ before: 10_004, keepPerOrg: 100, orgs: [], now: 0 })).toBe(1);
    expect(await ids({})).toEqual(["rq5"]);
  });
});

describe("several relays starting against one empty PostgreSQL database at once", () => {
  it("migrate it exactly once between them, and all open it", async () => {
    const location = await emptyDatabase("postgres");
    const stores = await Promise.all(Array.from({ length: 5 }, () => openStore(location)));
    try {
      expect(stores.map((s) => s.migrated).sort((a, b) => b - a)).toEqual([MIGRATIONS.length, 0, 0, 0, 0]);
      const org = (await stores[1]!.orgs.create("Shared"))!;
      for (const s of stores) expect(await s.orgs.find("shared")).toEqual(org);
    } finally {
      for (const s of stores) await s.close();
    }
  });
});

describe("what a PostgreSQL database announces to every relay", () => {
  it("a deployed stack's changes that routing reads, never its runtime's state (written at every deployment), and what a user may do", async () => {
    const location = (await emptyDatabase("postgres")) as Extract<DatabaseLocation, { kind: "postgres" }>;
    const store = await openStore(location);
    const listener = new pg.Client({ connectionString: location.url });
    await listener.connect();
    try {
      const heard: string[] = [];
      listener.on("notification", (n) => heard.push(n.payload ?? ""));
      await listener.query("LISTEN makina_changes");
      const org = (await store.orgs.create("N"))!;
      const machine = await store.machines.create({ orgId: org.id, name: "m", tokenHash: "h" });
      const stack = await store.stacks.create({ orgId: org.id, name: "s", machineId: machine.id, runtime: "gguf", modelRef: "/m.gguf", modelId: "m", hasEndpoint: true });
      await store.stacks.transition(stack.id, "deploying");
      await store.stacks.transition(stack.id, "deployed", { contextSize: 2048 });
      // Announcements come in commit order, whichever session sends them: once this marker is heard,
      // every announcement of the writes above has been, and none of them can arrive late.
      await listener.query("NOTIFY makina_changes, 'marker'");
      await vi.waitFor(() => expect(heard).toContain("marker"));
      expect(heard).toContain(`stacks:${org.id}`);
      heard.length = 0;
      // A machine relinking runs the stack's deployment again: its runtime's state is written, nothing routing reads.
      for (const state of ["loading", "ready", "ready"]) await store.stacks.setRuntimeState(stack.id, state, null);
      // Announcements come in commit order: once the undeploy's is heard, any before it would have been.
      await store.stacks.transition(stack.id, "undeploying");
      await vi.waitFor(() => expect(heard).toEqual([`stacks:${org.id}`]));
      // A user's role, state and password, and its deletion; not its sign-ins.
      heard.length = 0;
      const user = (await store.users.create({ orgId: org.id, login: "u", passwordHash: "h", role: "member" }))!;
      await store.users.update(user.id, { disabled: true }, { keepAnAdmin: false });
      await store.users.update(user.id, { role: "admin" }, { keepAnAdmin: false });
      await store.users.setPasswordHash(user.id, "h2");
      await store.users.delete(user.id);
      await vi.waitFor(() => expect(heard).toEqual(Array.from({ length: 4 }, () => `user:${user.id}`)));
    } finally {
      await listener.end();
      await store.close();
    }
  });
});
