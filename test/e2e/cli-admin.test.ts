import { execFile, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLI, runCli, startCli, stopCli } from "../helpers/cli.js";
import { testModelPath } from "../helpers/models.js";

describe("an operator runs the relay and an agent as separate processes and administers them with makina admin", () => {
  let dataDir: string;
  let relay: ChildProcess;
  let agent: ChildProcess | undefined;
  let baseURL: string;
  const admin = (...args: string[]) => runCli(["admin", ...args, "--data-dir", dataDir, "--json"]);
  const json = async (...args: string[]) => {
    const r = await admin(...args);
    expect(r.code, r.stderr).toBe(0);
    return JSON.parse(r.stdout) as Record<string, unknown>;
  };

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), "makina-e2e-"));
    relay = (await startCli(["relay", "--data-dir", dataDir, "--port", "0", "--grpc-port", "0"], /agents dial/)).child;
    baseURL = `${(JSON.parse(readFileSync(join(dataDir, "relay.json"), "utf8")) as { url: string }).url}/v1`;
  });
  afterAll(async () => {
    if (agent) await stopCli(agent);
    if (relay) expect(await stopCli(relay)).toBe(0);
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("registers a machine, deploys a GGUF stack, and serves the key printed by `key create --json`", async () => {
    const org = await json("org", "create", "Acme Labs");
    expect(org).toEqual({ id: expect.stringMatching(/^org_/), name: "Acme Labs", slug: "acme-labs" });

    const machine = await json("machine", "create", "--org", "acme-labs", "--name", "worker-1");
    expect(machine.id).toMatch(/^mach_/);
    expect(machine.token).toMatch(/^mk_mach_[A-Za-z0-9]{32,}$/);
    expect(machine.install_command).toContain(String(machine.id));

    // The relay listens beyond loopback by default, so its link is TLS with its own CA, which the agent pins;
    // the token comes from a file, so it never shows in `ps`.
    const info = JSON.parse(readFileSync(join(dataDir, "relay.json"), "utf8")) as { link_address: string; link_ca_sha256: string };
    expect(machine.ca_sha256).toBe(info.link_ca_sha256);
    expect(machine.install_command).toContain(`--ca-sha256 ${info.link_ca_sha256}`);
    const tokenFile = join(dataDir, "machine-token");
    writeFileSync(tokenFile, `${String(machine.token)}\n`, { mode: 0o600 });
    agent = (
      await startCli(
        ["agent", "--server", info.link_address, "--machine-id", String(machine.id), "--token-file", tokenFile, "--ca-sha256", info.link_ca_sha256, "--data-dir", join(dataDir, "agent"), "--threads", "1"],
        /link online/,
        { MAKINA_AGENT_GPU: "false" },
      )
    ).child;
    const machines = (await json("machine", "list", "--org", "acme-labs")) as unknown as { id: string; state: string; hardware: { cpu_logical_cores: number } }[];
    expect(machines).toHaveLength(1);
    expect(machines[0]!.state).toBe("online");
    expect(machines[0]!.hardware.cpu_logical_cores).toBeGreaterThan(0);

    const stack = await json("stack", "create", "--org", "acme-labs", "--name", "tiny", "--machine", String(machine.id), "--runtime", "gguf", "--model", testModelPath(), "--model-id", "tiny-story");
    expect(stack.state).toBe("draft");
    expect((stack.compatibility as { ok: boolean }).ok).toBe(true);

    const deployed = await json("stack", "deploy", String(stack.id), "--wait");
    expect(deployed.state).toBe("deployed");
    expect((deployed.deployment as { steps: { kind: string; state: string }[] }).steps.map((s) => [s.kind, s.state])).toEqual([
      ["install_runtime", "succeeded"],
      ["pull_model", "succeeded"],
      ["configure_endpoint", "succeeded"],
    ]);

    // Without --json, --wait shows each step's progress on stderr and the stack on stdout.
    // Pinned to the model's SHA-256 (with --model-sha256): the machine checks it; `stack list` says how each model is checked.
    const second = await json("stack", "create", "--org", "acme-labs", "--name", "tiny-2", "--machine", String(machine.id), "--runtime", "gguf", "--model", testModelPath(), "--model-id", "tiny-2", "--model-sha256", "270cba1bd5109f42d03350f60406024560464db173c0e387d91f0426d3bd256d");
    expect(second.model_sha256).toBe("270cba1bd5109f42d03350f60406024560464db173c0e387d91f0426d3bd256d");
    const unpinned = await runCli(["admin", "stack", "create", "--org", "acme-labs", "--name", "from-url", "--machine", String(machine.id), "--runtime", "gguf", "--model", "https://models.example/tiny.gguf", "--model-id", "from-url", "--data-dir", dataDir]);
    expect(unpinned.stdout).toMatch(/model:\s+https:\/\/models\.example\/tiny\.gguf \(unverified: no SHA-256 pinned/);
    // It says which APIs the stack answers: a GGUF stack chat and embeddings, one behind an orchestrator chat only.
    expect(unpinned.stdout).toMatch(/serves:\s+chat and embeddings\n/);
    const voted = await runCli(["admin", "stack", "create", "--org", "acme-labs", "--name", "voted", "--machine", String(machine.id), "--runtime", "gguf", "--model", testModelPath(), "--model-id", "voted", "--orchestrator", "vote", "--data-dir", dataDir]);
    expect(voted.stdout).toMatch(/serves:\s+chat only\n/);
    const list = await runCli(["admin", "stack", "list", "--org", "acme-labs", "--data-dir", dataDir]);
    expect(list.stdout).toMatch(/MODEL CHECK/);
    expect(list.stdout).toMatch(/tiny-2\s+draft\s+gguf\s+tiny-2\s+pinned sha256/);
    expect(list.stdout).toMatch(/from-url\s+draft\s+gguf\s+from-url\s+unverified/);
    const human = await runCli(["admin", "stack", "deploy", String(second.id), "--wait", "--data-dir", dataDir]);
    expect(human.code, human.stderr).toBe(0);
    expect(human.stderr).toContain("install_runtime: succeeded");
    expect(human.stderr).toContain("configure_endpoint: succeeded");
    expect(human.stdout).toMatch(/state:\s+deployed/);

    const created = await json("key", "create", "--org", "acme-labs", "--name", "ci");
    expect(created.key).toMatch(/^mk_live_[A-Za-z0-9]{32,}$/);
    const client = new OpenAI({ baseURL, apiKey: String(created.key), maxRetries: 0 });
    expect((await client.models.list()).data.map((m) => m.id)).toEqual(["tiny-story", "tiny-2"]);
    const res = await client.chat.completions.create({ model: "tiny-story", messages: [{ role: "user", content: "Once upon a time" }], max_tokens: 8, temperature: 0 });
    expect(res.choices[0]!.message.content!.length).toBeGreaterThan(0);
    expect(res.usage!.completion_tokens).toBe(8);

    // The request log: every request of the organization's keys, refused ones too; a stack that captures keeps
    // the prompt and answer, shown by `request get`.
    const capturing = await json("stack", "update", String(stack.id), "--capture-hours", "1");
    expect(capturing).toMatchObject({ capture_hours: 1, changed: ["capture_hours"], redeployed: false });
    await client.chat.completions.create({ model: "tiny-story", messages: [{ role: "user", content: "Hello" }], max_tokens: 2 });
    expect(await client.chat.completions.create({ model: "nope", messages: [{ role: "user", content: "Hello" }] }).catch((e: unknown) => e)).toBeInstanceOf(OpenAI.NotFoundError);
    const logged = (await json("request", "list", "--org", "acme-labs")) as unknown as { total: number; data: { id: string; status: number; model: string; key_name: string; captured: boolean }[] };
    expect(logged.data.map((r) => [r.status, r.model, r.key_name, r.captured])).toEqual([
      [404, "nope", "ci", false],
      [200, "tiny-story", "ci", true],
      [200, "tiny-story", "ci", false],
    ]);
    const one = await json("request", "get", logged.data[1]!.id);
    expect(one.capture).toMatchObject({ messages: [{ role: "user", content: "Hello" }], truncated: false });
    const errors = await runCli(["admin", "request", "list", "--org", "acme-labs", "--status", "error", "--data-dir", dataDir]);
    expect(errors.stdout).toMatch(/404\s+model_not_found\s+ci\s+nope/);
    expect(errors.stdout).not.toContain("tiny-story");
    const shownCapture = await runCli(["admin", "request", "get", logged.data[1]!.id, "--data-dir", dataDir]);
    expect(shownCapture.stdout).toMatch(/Prompt:[\s\S]*"Hello"[\s\S]*Answer:/);
    // The overview: the machine with its load (sampled by its agent), the stacks, the requests just made.
    const overview = await runCli(["admin", "overview", "--org", "acme-labs", "--data-dir", dataDir]);
    expect(overview.stdout).toMatch(/Machines: 1 online, 0 offline/);
    expect(overview.stdout).toMatch(/Stacks:\s+2 deployed \(2 ready/);
    expect(overview.stdout).toMatch(/last hour 3 \(1 errors, 33\.3%\)/);
    expect(overview.stdout).toMatch(/MACHINE\s+CPU\s+MEMORY/);
    const scoped = await json("overview", "--org", "acme-labs", "--stack", String(stack.id));
    expect(scoped).toMatchObject({ object: "overview", scope: { stack: stack.id }, stacks: { total: 1 } });
    const both = await admin("overview", "--org", "acme-labs", "--stack", String(stack.id), "--machine", "mach_x");
    expect([both.code, both.stderr]).toEqual([2, expect.stringContaining("mutually exclusive")]);
    const forever = await admin("stack", "update", String(stack.id), "--capture-hours", "forever");
    expect([forever.code, forever.stderr]).toEqual([1, expect.stringContaining("'capture_hours' must be a whole number of hours from 1 to 720")]);
    expect(await json("stack", "update", String(stack.id), "--capture-hours", "none")).toMatchObject({ capture_hours: null });

    const keys = (await json("key", "list", "--org", "acme-labs")) as unknown as Record<string, unknown>[];
    expect(keys).toHaveLength(1);
    expect(JSON.stringify(keys)).not.toContain(String(created.key));
    expect(keys[0]!.last_used_at).toEqual(expect.any(Number));

    // Changed in place: a limit, a restriction and an expiry, shown as the list shows them; then cleared.
    const updated = await json("key", "update", String(created.id), "--rpm", "600", "--stack", String(stack.id), "--expires", "2999-12-31");
    expect(updated).toMatchObject({ rpm: 600, stack_ids: [stack.id], expires_at: Date.parse("2999-12-31"), state: "active" });
    const shown = await runCli(["admin", "key", "update", String(created.id), "--rpm", "none", "--any-stack", "--expires", "never", "--data-dir", dataDir]);
    expect(shown.stdout).toMatch(/limits:\s+none/);
    expect(shown.stdout).toMatch(/restrictions:\s+none/);
    expect(shown.stdout).toMatch(/expires:\s+never/);
    const nothing = await admin("key", "update", String(created.id));
    expect([nothing.code, nothing.stderr]).toEqual([2, expect.stringContaining("Nothing to change")]);
    const badDate = await admin("key", "update", String(created.id), "--expires", "soon");
    expect([badDate.code, badDate.stderr]).toEqual([2, expect.stringContaining("--expires is a date-time")]);
    const past = await admin("key", "update", String(created.id), "--expires", "2001-01-01");
    expect([past.code, past.stderr]).toEqual([1, expect.stringContaining("'expires_at' must be in the future")]);

    // A new secret, printed once, the old one stopping at once; blocked and unblocked.
    const regenerated = await json("key", "regenerate", String(created.id));
    expect(regenerated).toMatchObject({ id: created.id, key: expect.stringMatching(/^mk_live_/), state: "active" });
    expect(await client.models.list().catch((e: unknown) => e)).toBeInstanceOf(OpenAI.AuthenticationError);
    const renewed = new OpenAI({ baseURL, apiKey: String(regenerated.key), maxRetries: 0 });
    expect((await renewed.models.list()).data.length).toBeGreaterThan(0);
    expect((await json("key", "block", String(created.id))).state).toBe("blocked");
    expect(await renewed.models.list().catch((e: unknown) => e)).toBeInstanceOf(OpenAI.AuthenticationError);
    expect((await json("key", "unblock", String(created.id))).state).toBe("active");
    const tooLong = await admin("key", "regenerate", String(created.id), "--grace", "90000");
    expect([tooLong.code, tooLong.stderr]).toEqual([1, expect.stringContaining("'grace_s' must be an integer from 0 to 86400")]);

    const revoked = await json("key", "revoke", String(created.id));
    expect(revoked.state).toBe("revoked");
    const err = await client.models.list().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.AuthenticationError);
  });

  it("adds users who can sign in to the web application, and lists them", async () => {
    const generated = await json("user", "create", "--org", "acme-labs", "--login", "ada@acme.test", "--role", "admin");
    expect(generated).toMatchObject({ id: expect.stringMatching(/^user_/), login: "ada@acme.test", role: "admin", password: expect.stringMatching(/^[\w-]{20}$/) });
    const withStdin = (input: string, ...args: string[]) =>
      new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
        const child = execFile(process.execPath, [CLI, "admin", "user", "create", "--org", "acme-labs", ...args, "--password-stdin", "--data-dir", dataDir, "--json"], (err, stdout, stderr) =>
          resolve({ code: err ? (typeof err.code === "number" ? err.code : 1) : 0, stdout, stderr }),
        );
        child.stdin!.end(input);
      });
    const chosen = await withStdin("a password of my own\n", "--login", "mo");
    expect(chosen.code, chosen.stderr).toBe(0);
    expect(JSON.parse(chosen.stdout)).toMatchObject({ login: "mo", role: "member" });
    expect(chosen.stdout).not.toContain("password");

    const users = (await json("user", "list", "--org", "acme-labs")) as unknown as { login: string; role: string }[];
    expect(users.map((u) => [u.login, u.role])).toEqual([
      ["ada@acme.test", "admin"],
      ["mo", "member"],
    ]);
    const origin = new URL(baseURL).origin;
    const signIn = (login: string, password: string) => fetch(`${origin}/auth/v1/sign-in`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ login, password }) });
    expect((await signIn("ada@acme.test", String(generated.password))).status).toBe(200);
    expect((await signIn("mo", "a password of my own")).status).toBe(200);

    const short = await withStdin("short\n", "--login", "x");
    expect(short.code).toBe(1);
    expect(short.stderr).toContain("The password must have at least 10 characters.");
    const taken = await admin("user", "create", "--org", "acme-labs", "--login", "mo");
    expect(taken.code).toBe(1);
    expect(taken.stderr).toContain("The login 'mo' is taken.");
  });

  it("offboards users (disable, enable, set-role, reset-password, delete) and reads the audit log", async () => {
    const origin = new URL(baseURL).origin;
    const signIn = (login: string, password: string) => fetch(`${origin}/auth/v1/sign-in`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ login, password }) });
    const made = await json("user", "create", "--org", "acme-labs", "--login", "temp@acme.test");
    // Named by login within the organization, or by id.
    expect(await json("user", "disable", "temp@acme.test", "--org", "acme-labs")).toMatchObject({ id: made.id, disabled_at: expect.any(Number) });
    expect((await signIn("temp@acme.test", String(made.password))).status).toBe(401);
    expect((await runCli(["admin", "user", "list", "--org", "acme-labs", "--data-dir", dataDir])).stdout).toMatch(/temp@acme\.test\s+member\s+disabled/);
    expect(await json("user", "enable", String(made.id))).toMatchObject({ disabled_at: null });
    expect(await json("user", "set-role", String(made.id), "admin")).toMatchObject({ role: "admin" });
    const reset = await json("user", "reset-password", String(made.id));
    expect(reset.password).toMatch(/^[\w-]{20}$/);
    expect((await signIn("temp@acme.test", String(made.password))).status).toBe(401);
    expect((await signIn("temp@acme.test", String(reset.password))).status).toBe(200);
    expect(await json("user", "delete", String(made.id))).toEqual({ id: made.id, deleted: true, keys_revoked: 0 });
    const unnamed = await admin("user", "disable", "temp@acme.test");
    expect([unnamed.code, unnamed.stderr]).toEqual([2, expect.stringContaining("give --org to find the login")]);

    const page = (await json("audit", "list", "--org", "acme-labs", "--action", "user", "--limit", "6")) as unknown as { data: { action: string; actor: { kind: string } }[]; next: string | null };
    expect(page.data.map((e) => e.action)).toEqual(["user.deleted", "user.password_reset", "user.role_changed", "user.enabled", "user.disabled", "user.created"]);
    expect(page.data.every((e) => e.actor.kind === "operator")).toBe(true);
    const human = await runCli(["admin", "audit", "list", "--org", "acme-labs", "--limit", "2", "--data-dir", dataDir]);
    expect(human.stdout).toMatch(/^WHEN\s+ACTION\s+OUTCOME\s+WHO\s+FROM\s+TARGET/);
    expect(human.stdout).toMatch(/user\.deleted\s+success\s+operator \(admin token\)\s+127\.0\.0\.1\s+user temp@acme\.test/);
    expect(human.stdout).toMatch(/More: --before aud_[a-z0-9]{16}/);
    // Searched by target, exported as CSV with the same filter.
    const about = (await json("audit", "list", "--org", "acme-labs", "--target", "temp@acme")) as unknown as { data: { action: string }[] };
    expect(about.data.map((e) => e.action)).toContain("user.deleted");
    const exported = await runCli(["admin", "audit", "export", "--org", "acme-labs", "--target", "temp@acme", "--data-dir", dataDir]);
    const [header, ...rows] = exported.stdout.trim().split("\r\n");
    expect(header).toBe("at,action,outcome,actor_kind,actor_id,actor_login,address,target_kind,target_id,target_name,detail,id");
    expect(rows.map((r) => r.split(",")[1])).toEqual(about.data.map((e) => e.action));
  });

  it("keeps its data directory private and refuses a second relay on it, leaving the first one serving", async () => {
    expect(statSync(dataDir).mode & 0o777).toBe(0o700);
    expect(statSync(join(dataDir, "makina.db")).mode & 0o777).toBe(0o600);
    expect(statSync(join(dataDir, "admin-token")).mode & 0o777).toBe(0o600);
    const second = await runCli(["relay", "--data-dir", dataDir, "--port", "0", "--grpc-port", "0"]);
    expect(second.code).toBe(1);
    expect(second.stderr).toContain(`Another relay (pid ${relay.pid}) is using the data directory ${dataDir}`);
    const machines = (await json("machine", "list", "--org", "acme-labs")) as unknown as { state: string }[];
    expect(machines.map((m) => m.state)).toEqual(["online"]);
  });

  it("sets the organization's default key limits, shown in org list, and clears them", async () => {
    const set = await json("org", "key-limits", "acme-labs", "--rpm", "100", "--tpm", "20000");
    expect([set.default_key_rpm, set.default_key_tpm]).toEqual([100, 20000]);
    expect((await runCli(["admin", "org", "list", "--data-dir", dataDir])).stdout).toMatch(/acme-labs\s+Acme Labs\s+100 RPM, 20000 TPM/);
    const cleared = await json("org", "key-limits", "acme-labs", "--rpm", "none", "--tpm", "none");
    expect([cleared.default_key_rpm, cleared.default_key_tpm]).toEqual([null, null]);
  });

  it("gives the organization and a key token budgets, shown with what they spent, and clears them", async () => {
    const org = await json("org", "budget", "acme-labs", "50M/month");
    expect([org.budget, org.budget_spent]).toEqual([{ tokens: 50_000_000, period: "month" }, expect.any(Number)]);
    expect((await runCli(["admin", "org", "list", "--data-dir", dataDir])).stdout).toMatch(/acme-labs\s+Acme Labs\s+none\s+[\d,]+ \/ 50,000,000 a month/);
    const key = await json("key", "create", "--org", "acme-labs", "--name", "intern", "--budget", "100k/day");
    expect([key.budget, key.budget_spent]).toEqual([{ tokens: 100_000, period: "day" }, 0]);
    expect((await runCli(["admin", "key", "list", "--org", "acme-labs", "--data-dir", dataDir])).stdout).toMatch(/intern .* 0 \/ 100,000 a day/);
    expect(await json("key", "update", String(key.id), "--budget", "none")).toMatchObject({ budget: null, budget_spent: null });
    expect(await json("org", "budget", "acme-labs", "none")).toMatchObject({ budget: null });
    const bad = await admin("key", "update", String(key.id), "--budget", "100/year");
    expect([bad.code, bad.stderr.trim()]).toEqual([2, "makina: --budget is TOKENS/PERIOD, such as 100000/day, 100k/day or 50M/month (period day, week or month, in UTC), or none."]);
  });

  it("gives a key a service tier when made and when edited, shown in the list", async () => {
    const key = await json("key", "create", "--org", "acme-labs", "--name", "chat-front", "--service-tier", "priority");
    expect(key.service_tier).toBe("priority");
    // `edit` is `update`'s other name.
    expect(await json("key", "edit", String(key.id), "--service-tier", "flex")).toMatchObject({ service_tier: "flex" });
    expect((await runCli(["admin", "key", "list", "--org", "acme-labs", "--data-dir", dataDir])).stdout).toMatch(/chat-front .* flex /);
    const bad = await admin("key", "update", String(key.id), "--service-tier", "urgent");
    expect([bad.code, bad.stderr]).toEqual([2, expect.stringContaining("service-tier")]);
  });

  it("adds an alert webhook (its secret printed once), lists it, and refuses a private address", async () => {
    const made = await json("alert", "create", "--org", "acme-labs", "--url", "https://hooks.example.com/services/T0/B0/x", "--event", "machine.offline", "--event", "budget.threshold", "--offline-after", "600");
    expect(made).toMatchObject({ secret: expect.stringMatching(/^whsec_/), events: ["machine.offline", "budget.threshold"], machine_offline_after_s: 600 });
    expect((await runCli(["admin", "alert", "list", "--org", "acme-labs", "--data-dir", dataDir])).stdout).toMatch(/hooks\.example\.com\S*\s+machine\.offline, budget\.threshold\s+600 s\s+10%/);
    const refused = await admin("alert", "create", "--org", "acme-labs", "--url", "https://192.168.1.10/hook", "--event", "machine.offline");
    expect([refused.code, refused.stderr]).toEqual([1, expect.stringContaining("192.168.1.10, which is not a public address")]);
    expect(await json("alert", "delete", String(made.id))).toEqual({ id: made.id, deleted: true });
  });

  it("exits 2 with a message on bad usage and 1 when the relay refuses", async () => {
    const usage = await runCli(["admin", "key", "create", "--data-dir", dataDir]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain("Missing required argument: org");
    const refused = await admin("stack", "deploy", "stk_doesnotexist");
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("No stack 'stk_doesnotexist'");
    const badLimit = await admin("org", "key-limits", "acme-labs", "--rpm", "0");
    expect([badLimit.code, badLimit.stderr.trim()]).toEqual([2, "makina: --rpm is a positive integer, or none."]);
    const noRelay = await runCli(["admin", "org", "list", "--relay", "http://127.0.0.1:1", "--admin-token", "x"]);
    expect(noRelay.code).toBe(1);
    expect(noRelay.stderr).toContain("Cannot reach the relay");
  });
});
