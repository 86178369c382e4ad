import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { freePort, httpReady, ProcessSupervisor, type SupervisedState } from "../../agent/supervisor/index.js";
import { silentLogger } from "../../proto/index.js";
import { REPO_ROOT } from "../helpers/models.js";

// The stand-in server is a small Node program that behaves like an OpenAI-compatible model server.
const STANDIN = join(REPO_ROOT, "test", "fixtures", "standins", "openai-server.mjs");

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe("supervising a runtime process", () => {
  const supervisors: ProcessSupervisor[] = [];
  afterEach(async () => {
    await Promise.all(supervisors.splice(0).map((s) => s.stop()));
  });

  async function supervise(env: Record<string, string>, options: { minUptimeMs?: number; maxEarlyExits?: number; healthIntervalMs?: number; healthTimeoutMs?: number; maxMissedProbes?: number } = {}) {
    const port = await freePort();
    const states: SupervisedState[] = [];
    const s = new ProcessSupervisor({
      name: "standin",
      command: process.execPath,
      args: [STANDIN, "--host", "127.0.0.1", "--port", String(port), "--model", "m"],
      env: { ...process.env, ...env },
      ready: (signal) => httpReady(`http://127.0.0.1:${port}/health`, signal),
      probeIntervalMs: 20,
      backoffMinMs: 10,
      backoffMaxMs: 50,
      stopGraceMs: 2000,
      log: silentLogger(),
      ...options,
    });
    s.on("state", (st) => states.push(st));
    supervisors.push(s);
    return { s, port, states };
  }

  it("tells each line the process writes whole, however its output is cut, and the last one at its exit", async () => {
    const told: string[] = [];
    const script = "process.stdout.write('key: mk_li'); setTimeout(() => { process.stdout.write('ve_abc\\nlast words'); setTimeout(() => process.exit(3), 50); }, 100); setInterval(() => {}, 1000);";
    const s = new ProcessSupervisor({ name: "talker", command: process.execPath, args: ["-e", script], ready: async () => false, probeIntervalMs: 20, maxEarlyExits: 1, backoffMinMs: 10, backoffMaxMs: 20, log: silentLogger(), onOutput: (line) => told.push(line) });
    supervisors.push(s);
    await s.start().catch(() => undefined);
    await vi.waitFor(() => expect(told).toEqual(expect.arrayContaining(["key: mk_live_abc", "last words"])), { timeout: 5000, interval: 20 });
    // Never in pieces: a token split across two writes is one line (which the stack's log then redacts whole).
    expect(told.filter((l) => l.includes("mk_"))).toEqual(["key: mk_live_abc"]);
  });

  it("is ready only once the readiness probe passes", async () => {
    const { s, port } = await supervise({ STANDIN_STARTUP_MS: "300" });
    await s.start();
    expect(s.state).toBe("ready");
    expect((await fetch(`http://127.0.0.1:${port}/health`)).status).toBe(200);
  });

  it("restarts a process that crashed, and is ready again", async () => {
    const { s, states } = await supervise({ STANDIN_EXIT_AFTER_MS: "400" }, { minUptimeMs: 100 });
    await s.start();
    await vi.waitFor(() => expect(s.restarts).toBeGreaterThanOrEqual(1), { timeout: 5000, interval: 20 });
    await vi.waitFor(() => expect(s.state).toBe("ready"), { timeout: 5000, interval: 20 });
    expect(states.slice(0, 4)).toEqual(["ready", "restarting", "starting", "ready"]);
    expect(s.lastError).toContain("exited with code 1");
  });

  it("restarts a ready process that stops answering its health probe (alive but wedged), and is ready again", async () => {
    const { s, states, port } = await supervise({}, { healthIntervalMs: 50, healthTimeoutMs: 200, maxMissedProbes: 3 });
    await s.start();
    const wedged = s.pid!;
    let reason: string | null = null;
    s.on("state", (st) => st === "unresponsive" && (reason = s.lastError));
    // SIGSTOP: the process exists and holds its port, but answers nothing, as a deadlocked server would.
    process.kill(wedged, "SIGSTOP");
    await vi.waitFor(() => expect(states).toContain("unresponsive"), { timeout: 10_000, interval: 20 });
    expect(reason).toBe("not answering its health probe (3 missed in a row, 50 ms apart): restarting it");
    await vi.waitFor(() => expect([s.state, s.pid === wedged]).toEqual(["ready", false]), { timeout: 10_000, interval: 20 });
    expect(states.slice(0, 5)).toEqual(["ready", "unresponsive", "restarting", "starting", "ready"]);
    expect(alive(wedged)).toBe(false);
    expect((await fetch(`http://127.0.0.1:${port}/health`)).status).toBe(200);
  });

  it("keeps a process that answers its health probe, however long it runs", async () => {
    const port = await freePort();
    let probes = 0;
    const s = new ProcessSupervisor({
      name: "standin",
      command: process.execPath,
      args: [STANDIN, "--host", "127.0.0.1", "--port", String(port), "--model", "m"],
      ready: (signal) => (probes++, httpReady(`http://127.0.0.1:${port}/health`, signal)),
      probeIntervalMs: 20,
      healthIntervalMs: 20,
      healthTimeoutMs: 1000,
      maxMissedProbes: 2,
      log: silentLogger(),
    });
    const states: SupervisedState[] = [];
    s.on("state", (st) => states.push(st));
    supervisors.push(s);
    await s.start();
    const pid = s.pid;
    const first = probes;
    // Twenty more probes, all answered: still the same process, ready.
    await vi.waitFor(() => expect(probes - first).toBeGreaterThanOrEqual(20), { timeout: 10_000, interval: 20 });
    expect([s.state, s.pid, states]).toEqual(["ready", pid, ["ready"]]);
  });

  it("gives up after a crash loop and ends failed, saying why", async () => {
    const { s } = await supervise({ STANDIN_EXIT_AFTER_MS: "1" }, { minUptimeMs: 5000, maxEarlyExits: 3 });
    await expect(s.start()).rejects.toMatchObject({ code: "runtime_unavailable", message: expect.stringContaining("crash loop") });
    expect(s.state).toBe("failed");
    expect(s.restarts).toBe(2);
  });

  it("kills the whole process group on stop and never restarts it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "makina-sup-"));
    const pidFile = join(dir, "grandchild.pid");
    const { s, states } = await supervise({ STANDIN_CHILD: "1", STANDIN_PID_FILE: pidFile });
    await s.start();
    await vi.waitFor(() => expect(existsSync(pidFile)).toBe(true), { timeout: 5000, interval: 20 });
    const grandchild = Number(readFileSync(pidFile, "utf8"));
    const pid = s.pid!;
    expect(alive(grandchild)).toBe(true);
    await s.stop();
    await vi.waitFor(() => expect([alive(pid), alive(grandchild)]).toEqual([false, false]), { timeout: 5000, interval: 20 });
    expect(s.state).toBe("stopped");
    expect(states).not.toContain("restarting");
    rmSync(dir, { recursive: true, force: true });
  });

  it("stops a model server that does not watch its stdin (as vLLM and MLX) when the agent is killed with SIGKILL, through the lifeline", async () => {
    const dir = mkdtempSync(join(tmpdir(), "makina-lifeline-"));
    const serverPid = join(dir, "server.pid");
    // A stand-in agent: a process that supervises the stand-in server under the lifeline, as the vLLM adapter does.
    const script = [
      `const { ProcessSupervisor, freePort, httpReady } = await import(${JSON.stringify(join(REPO_ROOT, "dist", "agent", "supervisor", "index.js"))});`,
      `const { silentLogger } = await import(${JSON.stringify(join(REPO_ROOT, "dist", "proto", "index.js"))});`,
      `const port = await freePort();`,
      `const s = new ProcessSupervisor({ name: "standin", command: process.execPath, args: [${JSON.stringify(STANDIN)}, "--host", "127.0.0.1", "--port", String(port), "--model", "m"],`,
      `  lifeline: true, ready: (signal) => httpReady("http://127.0.0.1:" + port + "/health", signal), log: silentLogger() });`,
      `await s.start();`,
      `console.log("ready");`,
      `setInterval(() => {}, 1000);`,
    ].join("\n");
    const agent = spawn(process.execPath, ["--input-type=module", "-e", script], { env: { ...process.env, STANDIN_SELF_PID_FILE: serverPid }, stdio: ["ignore", "pipe", "inherit"] });
    await new Promise<void>((resolve, reject) => {
      agent.stdout!.on("data", (d: Buffer) => d.toString().includes("ready") && resolve());
      agent.once("exit", (code) => reject(new Error(`the stand-in agent exited with ${code}`)));
    });
    const server = Number(readFileSync(serverPid, "utf8"));
    expect(alive(server)).toBe(true);
    agent.kill("SIGKILL");
    await vi.waitFor(() => expect(alive(server)).toBe(false), { timeout: 15_000, interval: 50 });
    rmSync(dir, { recursive: true, force: true });
  });

  it("fails clearly when the executable does not exist", async () => {
    const s = new ProcessSupervisor({ name: "ghost", command: "/no/such/vllm", args: [], ready: async () => false, minUptimeMs: 5000, maxEarlyExits: 2, backoffMinMs: 10, backoffMaxMs: 20, log: silentLogger() });
    supervisors.push(s);
    await expect(s.start()).rejects.toMatchObject({ message: expect.stringContaining("could not start /no/such/vllm") });
  });
});
