import { execFile, spawn, type ChildProcess } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { CLI, runCli, startCli, stopCli } from "../helpers/cli.js";
import { REPO_ROOT } from "../helpers/models.js";

/** Runs a shell command line from the repository, as a machine owner pastes it. */
function sh(line: string, env: NodeJS.ProcessEnv): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile("/bin/sh", ["-c", line], { cwd: REPO_ROOT, env, timeout: 60_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === "number" ? err.code : 1) : 0, stdout, stderr });
    });
  });
}

describe("scripts/install.sh joins a machine to a relay with the command the relay prints", () => {
  let dir: string;
  let relay: ChildProcess;
  let agent: ChildProcess | undefined;
  let env: NodeJS.ProcessEnv;
  const admin = async (...args: string[]) => {
    const r = await runCli(["admin", ...args, "--data-dir", join(dir, "relay"), "--json"]);
    expect(r.code, r.stderr).toBe(0);
    return JSON.parse(r.stdout) as Record<string, unknown>;
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "makina-install-"));
    relay = (await startCli(["relay", "--data-dir", join(dir, "relay"), "--port", "0", "--grpc-port", "0"], /agents dial/)).child;
    // `makina` is already on PATH (the built CLI), so the script skips `npm install --global`.
    const bin = join(dir, "bin");
    mkdirSync(bin);
    writeFileSync(join(bin, "makina"), `#!/bin/sh\nexec "${process.execPath}" "${CLI}" "$@"\n`);
    chmodSync(join(bin, "makina"), 0o755);
    env = { PATH: `${bin}:${process.env.PATH}`, HOME: join(dir, "home"), MAKINA_AGENT_GPU: "false", MAKINA_AGENT_THREADS: "1" };
  });
  afterAll(async () => {
    if (agent) await stopCli(agent);
    if (relay) await stopCli(relay);
    rmSync(dir, { recursive: true, force: true });
  });

  it("writes a private agent config, prints how to start the agent, and the machine comes online", async () => {
    const org = await admin("org", "create", "Install Co");
    const machine = await admin("machine", "create", "--org", String(org.slug), "--name", "new-box");
    const conf = join(dir, "conf");
    const r = await sh(`${String(machine.install_command)} --no-service --config-dir ${conf} --hf-token hf_InstallTestToken01234567890123456789`, env);
    expect(r.code, r.stderr).toBe(0);
    const file = join(conf, "agent.json");
    expect(r.stdout).toContain(`Wrote ${file}`);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(file, "utf8"))).toEqual({
      server: expect.stringMatching(/:\d+$/),
      machine_id: machine.id,
      token: machine.token,
      hf_token: "hf_InstallTestToken01234567890123456789",
      // The relay's link is TLS with its own CA: the agent trusts that CA alone.
      ca_sha256: machine.ca_sha256,
    });
    expect(machine.ca_sha256).toMatch(/^[0-9a-f]{64}$/);

    const start = /Start the agent with:\s+(.+)\n/.exec(r.stdout)?.[1];
    expect(start).toBe(`${join(dir, "bin", "makina")} agent --config ${file}`);
    agent = spawn("/bin/sh", ["-c", `exec ${start!}`], { env: { ...process.env, ...env }, stdio: "ignore" });
    await vi.waitFor(
      async () => {
        const machines = (await admin("machine", "list", "--org", String(org.slug))) as unknown as { id: string; state: string }[];
        expect(machines).toEqual([expect.objectContaining({ id: machine.id, state: "online" })]);
      },
      { timeout: 30_000, interval: 250 },
    );
    const doctor = await runCli(["doctor", "--config", file], env);
    expect(doctor.stdout).toMatch(/ok\s+daemon running/i);
    expect(doctor.stdout).toMatch(/ok\s+machine token accepted/i);
  });

  it("refuses bad input with a clear message and exit status 2, writing nothing", async () => {
    const conf = join(dir, "refused");
    const cases: [string, RegExp][] = [
      ["--server relay:8081 --machine-id mach_1", /--token are required/],
      ["--server relay:8081 --machine-id box --token mk_mach_1", /starts with mach_/],
      ['--server "relay:8081;rm" --machine-id mach_1 --token mk_mach_1', /hold only letters, digits/],
      ["--server relay:8081 --machine-id mach_1 --token mk_mach_1 --hf-token abc", /starts with hf_/],
      ["--server relay:8081 --machine-id mach_1 --token mk_mach_1 --verbose", /unknown option --verbose/],
      ["--server relay:8081 --machine-id mach_1 --token mk_mach_1 --ca-sha256 abc123", /64 hex digits/],
      [`--server relay:8081 --machine-id mach_1 --token mk_mach_1 --ca-sha256 ${"z".repeat(64)}`, /64 hex digits/],
    ];
    for (const [args, message] of cases) {
      const r = await sh(`sh scripts/install.sh ${args} --no-service --config-dir ${conf}`, env);
      expect([r.code, r.stderr]).toEqual([2, expect.stringMatching(message)]);
    }
    expect(() => statSync(conf)).toThrow();
  });

  it("checks with the relay before installing anything: a wrong or revoked token, or a relay that does not answer, stops it with the relay's words", async () => {
    const org = await admin("org", "create", "Careful Co");
    const machine = await admin("machine", "create", "--org", String(org.slug), "--name", "checked-box");
    const command = String(machine.install_command);
    expect(command).toMatch(/^sh scripts\/install\.sh --relay-url https?:\/\/\S+ --server /);
    const conf = join(dir, "never-written");
    const wrong = await sh(`${command.replace(String(machine.token), "mk_mach_notTheRightOne000000000000")} --no-service --config-dir ${conf}`, env);
    expect([wrong.code, wrong.stderr.trim()]).toEqual([1, "install.sh: the relay refused this machine: Unknown machine ID or machine token rejected. Nothing was installed."]);

    await admin("machine", "revoke", String(machine.id));
    const revoked = await sh(`${command} --no-service --config-dir ${conf}`, env);
    expect([revoked.code, revoked.stderr.trim()]).toEqual([1, "install.sh: the relay refused this machine: This machine was revoked; add it again to get a new token. Nothing was installed."]);

    const silent = await sh(`${command.replace(/--relay-url \S+/, "--relay-url http://127.0.0.1:9")} --no-service --config-dir ${conf}`, env);
    expect([silent.code, silent.stderr.trim()]).toEqual([1, "install.sh: the relay at http://127.0.0.1:9 does not answer: check the address, that the relay runs, and the firewall"]);
    expect(() => statSync(conf)).toThrow();
  });

  it("passes shellcheck (Debian's package, which CI installs)", async () => {
    const r = await sh("shellcheck --shell=sh scripts/install.sh", env);
    expect([r.code, r.stdout + r.stderr]).toEqual([0, ""]);
  });
});
