import { execFile, execFileSync, spawn, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import { operatorCertificates } from "../helpers/certificates.js";
import { runCli, startCli, stopCli } from "../helpers/cli.js";
import { REPO_ROOT } from "../helpers/models.js";
import { isAlive } from "../helpers/processes.js";
import { onlyNetworkAddress } from "../../relay/start/reach-warning.js";
import { chromium } from "playwright-core";
import { chromiumPath } from "../helpers/chromium.js";

/** Adds a machine on the web application's Machines page (in Chromium), and reads back what its panel shows once. */
async function addMachineInBrowser(relayUrl: string, login: string, password: string, name: string) {
  const browser = await chromium.launch({ executablePath: chromiumPath(), args: ["--no-sandbox", "--disable-dev-shm-usage"] });
  try {
    const page = await browser.newPage();
    page.setDefaultTimeout(30_000);
    await page.goto(relayUrl);
    await page.getByLabel("Login").fill(login);
    await page.getByLabel("Password").fill(password);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("button", { name: "Add your first machine" }).click();
    await page.getByLabel("Name").fill(name);
    await page.getByRole("button", { name: "Create machine" }).click();
    const command = (await page.getByTestId("install-command").textContent())!;
    const warning = page.getByTestId("loopback-warning");
    return {
      id: (await page.getByTestId("new-machine-id").textContent())!,
      token: (await page.getByTestId("new-machine-token").textContent())!,
      install_command: command,
      ca_sha256: /--ca-sha256 (\S+)/.exec(command)![1]!,
      reach_warning: (await warning.count()) > 0 ? await warning.textContent() : null,
    };
  } finally {
    await browser.close();
  }
}

/** An npm lockfile (package-lock.json, npm-shrinkwrap.json), as far as these tests read it. */
interface Lockfile {
  packages: Record<string, { version?: string; integrity?: string; optional?: boolean }>;
}

/**
 * Runs a shell command line as automation does: no terminal (a session of its own, so even a test run from a
 * terminal gives it none, and the install script takes its token from the environment rather than ask).
 */
function sh(line: string, env: NodeJS.ProcessEnv, timeout = 60_000): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile("setsid", ["-w", "/bin/sh", "-c", line], { cwd: REPO_ROOT, env, timeout }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === "number" ? err.code : 1) : 0, stdout, stderr });
    });
  });
}

/**
 * Runs a command line in a terminal (util-linux `script` gives it a pseudo-terminal), as a person pastes it: when
 * the terminal shows `prompt`, types `answer` and Enter. Resolves with what the terminal showed (stdout and stderr
 * together, as a terminal has them).
 */
function atTerminal(line: string, env: NodeJS.ProcessEnv, prompt: string, answer: string, timeout = 300_000): Promise<{ code: number; shown: string }> {
  return new Promise((resolve) => {
    const child = spawn("script", ["-qec", line, "/dev/null"], { cwd: REPO_ROOT, env, stdio: ["pipe", "pipe", "pipe"] });
    let shown = "";
    let typed = false;
    const timer = setTimeout(() => child.kill("SIGKILL"), timeout);
    const take = (chunk: Buffer) => {
      shown += chunk.toString();
      if (!typed && shown.includes(prompt)) {
        typed = true;
        child.stdin.write(`${answer}\n`);
      }
    };
    child.stdout.on("data", take);
    child.stderr.on("data", take);
    child.on("exit", (code) => {
      clearTimeout(timer);
      child.stdin.end();
      resolve({ code: code ?? 1, shown });
    });
  });
}


/**
 * The whole join of a bare machine, as the users do it: the install command a relay prints, run as shown,
 * fetching the script and the agent package from that relay (the package's dependencies come from the npm registry,
 * here through the npm cache that `npm ci` filled). The agent starts detached with a pid file (the fallback where
 * neither systemd nor launchd is there, as in this container) in a temporary prefix.
 */
describe("the install command a relay prints joins a bare machine: curl … | sh", () => {
  let dir: string;
  let relay: ChildProcess;
  let env: NodeJS.ProcessEnv;
  let relayUrl: string;
  /** The relay's install listener (TLS with the link's certificate), and the pin of its key. */
  let install: { url: string; pin: string };
  /** Fetches from the install listener as a machine does: curl, with the key pinned. */
  const pinnedCurl = (args: string[], pin = install.pin) => execFileSync("curl", ["-fsSk", "--pinnedpubkey", pin, ...args]);
  let org: string;
  let machine: { id: string; token: string; install_command: string; ca_sha256: string; reach_warning: string | null };
  /** This computer's network address (loopback only where it has none). */
  const publicAddress = onlyNetworkAddress() ?? "localhost";
  let prefix: string;
  const admin = async (...args: string[]) => {
    const r = await runCli(["admin", ...args, "--data-dir", join(dir, "relay"), "--json"]);
    expect(r.code, r.stderr).toBe(0);
    return JSON.parse(r.stdout) as unknown;
  };
  const machineState = async (id: string) => ((await admin("machine", "list", "--org", org)) as { id: string; state: string }[]).find((m) => m.id === id)?.state;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "makina-install-"));
    prefix = join(dir, "opt", "makina");
    // Started as an operator would for other machines to join: the address they reach this one at is printed.
    relay = (await startCli(["relay", "--data-dir", join(dir, "relay"), "--port", "0", "--grpc-port", "0", "--public-address", publicAddress], /agents dial/)).child;
    const info = JSON.parse(readFileSync(join(dir, "relay", "relay.json"), "utf8")) as { url: string; install_url: string; install_pin: string };
    relayUrl = info.url;
    install = { url: info.install_url, pin: info.install_pin };
    const npmCache = execFileSync("npm", ["config", "get", "cache"], { encoding: "utf8" }).trim();
    // A machine with Node, npm and curl on PATH and nothing of Makina; the GPU probe off so that doctor is quick.
    env = {
      PATH: process.env.PATH,
      HOME: join(dir, "home"),
      npm_config_cache: npmCache,
      npm_config_prefer_offline: "true",
      npm_config_update_notifier: "false",
      MAKINA_AGENT_GPU: "false",
      MAKINA_AGENT_THREADS: "1",
    };
    mkdirSync(env.HOME!);
    org = String(((await admin("org", "create", "Install Co")) as { slug: string }).slug);
    // The machine is added as a newcomer adds their second one: in the web application, whose command it runs.
    const { password } = (await admin("user", "create", "--org", org, "--login", "ops@install.test", "--role", "admin")) as { password: string };
    machine = await addMachineInBrowser(relayUrl, "ops@install.test", password, "new-box");
  });
  afterAll(async () => {
    if (existsSync(join(prefix, "run", "agent.pid"))) {
      const pid = Number(readFileSync(join(prefix, "run", "agent.pid"), "utf8"));
      if (isAlive(pid)) process.kill(pid, "SIGKILL");
    }
    if (relay) await stopCli(relay);
    rmSync(dir, { recursive: true, force: true });
  });

  it("serves the install script and the agent package of its own version, which holds no relay, over TLS to its pinned key only", async () => {
    expect(install.url).toMatch(new RegExp(`^https://${publicAddress}:\\d+$`));
    expect(install.pin).toMatch(/^sha256\/\/[A-Za-z0-9+/]{43}=$/);
    expect(pinnedCurl(["-D", "-", "-o", "/dev/null", `${install.url}/install.sh`]).toString()).toMatch(/content-type: text\/x-shellscript; charset=utf-8/i);
    expect(pinnedCurl([`${install.url}/install.sh`]).toString()).toBe(readFileSync(join(REPO_ROOT, "scripts", "install.sh"), "utf8"));
    // The gateway's plain-HTTP listener says where they are instead: a token must not reach it.
    for (const path of ["/install.sh", "/agent/v1/check"]) {
      const there = await fetch(`${relayUrl}${path}`, { method: path === "/install.sh" ? "GET" : "POST" });
      expect([path, there.status, ((await there.json()) as { error: { message: string } }).error.message]).toEqual([path, 404, expect.stringContaining("over TLS, on its install listener")]);
    }

    const check = pinnedCurl(["-H", "content-type: application/json", "--data-binary", JSON.stringify({ machine_id: machine.id, token: machine.token }), `${install.url}/agent/v1/check`]);
    const { version } = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")) as { version: string };
    const { agent_package: pkg } = JSON.parse(check.toString()) as { agent_package: { url: string; version: string; sha256: string } };
    expect(pkg).toEqual({ url: `/install/makina-agent-${version}.tgz`, file: `makina-agent-${version}.tgz`, version, sha256: expect.stringMatching(/^[0-9a-f]{64}$/) });
    const tgz = pinnedCurl([install.url + pkg.url]);
    expect(createHash("sha256").update(tgz).digest("hex")).toBe(pkg.sha256);
    writeFileSync(join(dir, "agent.tgz"), tgz);
    const manifest = JSON.parse(execFileSync("tar", ["-xzOf", join(dir, "agent.tgz"), "package/package.json"], { encoding: "utf8" })) as { name: string; dependencies: Record<string, string> };
    expect(manifest.name).toBe("makina-agent");
    expect(Object.keys(manifest.dependencies).sort()).toEqual(["@bufbuild/protobuf", "@grpc/grpc-js", "node-llama-cpp", "re2js", "systeminformation", "yargs"]);
    const files = execFileSync("tar", ["-tzf", join(dir, "agent.tgz")], { encoding: "utf8" });
    expect(files).toContain("package/dist/agent/");
    expect(files).not.toContain("package/dist/relay/");
    // Its whole dependency tree is pinned, with integrity hashes: the versions package-lock.json tested, and
    // none of the relay's own packages.
    const shrinkwrap = JSON.parse(execFileSync("tar", ["-xzOf", join(dir, "agent.tgz"), "package/npm-shrinkwrap.json"], { encoding: "utf8" })) as Lockfile;
    const lock = JSON.parse(readFileSync(join(REPO_ROOT, "package-lock.json"), "utf8")) as Lockfile;
    const pinned = Object.entries(shrinkwrap.packages).filter(([path]) => path !== "");
    expect(pinned.length).toBeGreaterThan(50);
    for (const [path, entry] of pinned) expect([path, entry.version, entry.integrity]).toEqual([path, lock.packages[path]!.version, lock.packages[path]!.integrity]);
    expect(Object.keys(shrinkwrap.packages)).toEqual(expect.arrayContaining(["node_modules/node-llama-cpp", "node_modules/@grpc/grpc-js", "node_modules/yargs"]));
    for (const relayOnly of ["better-sqlite3", "express", "pg", "kysely"]) expect(shrinkwrap.packages).not.toHaveProperty(`node_modules/${relayOnly}`);

    const other = JSON.parse(execFileSync("curl", ["-sSk", "--pinnedpubkey", install.pin, `${install.url}/install/makina-agent-0.0.1.tgz`]).toString()) as { error: { code: string } };
    expect(other.error.code).toBe("not_found");
  });

  it("installs into the prefix, starts the agent, and ends with makina doctor passing: the machine is online", async () => {
    // The line holds no token: the script asks for it on the terminal, so it is in no shell history and no
    // process's arguments.
    expect(machine.install_command).toBe(
      `curl -fsSLk --pinnedpubkey ${install.pin} ${install.url}/install.sh | sh -s -- --relay-url ${install.url} --pinned-pubkey ${install.pin} --server ${machine.install_command.match(/--server (\S+)/)![1]} --machine-id ${machine.id} --ca-sha256 ${machine.ca_sha256}`,
    );
    // Both addresses it names are the public address given (this computer's on the network), and nothing warns.
    expect(install.url).toMatch(new RegExp(`^https://${publicAddress}:\\d+$`));
    expect(machine.install_command).toMatch(new RegExp(` --server ${publicAddress}:\\d+ `));
    if (publicAddress !== "localhost") expect(machine.reach_warning).toBeNull();
    // Pasted into a terminal, and the token typed when asked (never echoed). A second relay address (one that
    // does not answer, standing for a relay that is down): the agent is given both and links to the one that answers.
    const r = await atTerminal(`${machine.install_command} --server 127.0.0.1:9 --prefix ${prefix} --service detached`, env, `Machine token for ${machine.id}`, machine.token);
    expect(r.code, r.shown).toBe(0);
    expect(r.shown).not.toContain(machine.token);
    expect(r.shown).toMatch(/ok\s+daemon running/);
    expect(r.shown).toMatch(/ok\s+machine token accepted/);
    expect(r.shown).toContain("This machine is online");
    // The script ended with the agent linked: the relay has it online now, with no wait.
    expect(await machineState(machine.id)).toBe("online");

    const config = join(prefix, "etc", "agent.json");
    expect(statSync(config).mode & 0o777).toBe(0o600);
    expect(statSync(join(prefix, "etc")).mode & 0o777).toBe(0o700);
    expect(JSON.parse(readFileSync(config, "utf8"))).toEqual({
      server: expect.stringMatching(/^[^,]+:\d+,127\.0\.0\.1:9$/),
      machine_id: machine.id,
      token: machine.token,
      ca_sha256: machine.ca_sha256,
      data_dir: join(prefix, "data"),
    });
    const pid = Number(readFileSync(join(prefix, "run", "agent.pid"), "utf8"));
    expect(isAlive(pid)).toBe(true);

    // The installed command finds its agent and config by itself.
    const doctor = await sh(`${join(prefix, "bin", "makina")} doctor`, env);
    expect(doctor.code, doctor.stdout + doctor.stderr).toBe(0);
    expect(doctor.stdout).toMatch(/ok\s+relay reachable: linked to/);
    const version = await sh(`${join(prefix, "bin", "makina")} --version`, env);
    expect(version.stdout.trim()).toBe((JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")) as { version: string }).version);
    // What npm installed is the package's lockfile, version for version.
    const shrinkwrap = JSON.parse(readFileSync(join(prefix, "lib", "npm-shrinkwrap.json"), "utf8")) as Lockfile;
    for (const [path, entry] of Object.entries(shrinkwrap.packages)) {
      if (path === "" || entry.optional) continue;
      const installed = JSON.parse(readFileSync(join(prefix, "lib", path, "package.json"), "utf8")) as { version: string };
      expect([path, installed.version]).toEqual([path, entry.version]);
    }
    expect(readdirSync(dirname(prefix)).sort()).toEqual(["makina"]);
    expect(readdirSync(prefix).sort()).toEqual(["bin", "data", "etc", "lib", "log", "run"]);
    const relayThere = await sh(`${join(prefix, "bin", "makina")} relay`, env);
    expect([relayThere.code, relayThere.stderr]).toEqual([1, expect.stringContaining("This is the agent package (makina-agent)")]);
  });

  it("refuses a package that does not pin its dependencies, and leaves the installed agent as it was", async () => {
    const unpinned = join(dir, "unpinned");
    mkdirSync(join(unpinned, "package"), { recursive: true });
    writeFileSync(join(unpinned, "package", "package.json"), JSON.stringify({ name: "makina-agent", version: "9.9.9", dependencies: { yargs: "*" } }));
    execFileSync("tar", ["-czf", join(dir, "unpinned.tgz"), "-C", unpinned, "package"]);
    const before = readFileSync(join(prefix, "lib", "dist", "cli", "main.js"));
    const r = await sh(`MAKINA_MACHINE_TOKEN=${machine.token} sh scripts/install.sh --source ${join(dir, "unpinned.tgz")} --server 127.0.0.1:9 --machine-id ${machine.id} --prefix ${prefix} --service none`, env);
    expect([r.code, r.stderr.trim()]).toEqual([1, expect.stringContaining("carries no npm-shrinkwrap.json")]);
    expect(readFileSync(join(prefix, "lib", "dist", "cli", "main.js"))).toEqual(before);
    expect(readdirSync(prefix)).not.toContain("lib.new");
    expect(isAlive(Number(readFileSync(join(prefix, "run", "agent.pid"), "utf8")))).toBe(true);
  });

  it("runs again as an upgrade in place: the config keeps its own settings, the agent restarts and is online again", async () => {
    const config = join(prefix, "etc", "agent.json");
    writeFileSync(config, JSON.stringify({ ...JSON.parse(readFileSync(config, "utf8")), max_context_size: 2048 }));
    const before = Number(readFileSync(join(prefix, "run", "agent.pid"), "utf8"));
    // The same command as the first install, the relay that does not answer included.
    const r = await sh(`${machine.install_command} --server 127.0.0.1:9 --prefix ${prefix} --service detached`, { ...env, MAKINA_MACHINE_TOKEN: machine.token }, 300_000);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toContain("is installed already");
    expect(JSON.parse(readFileSync(config, "utf8"))).toMatchObject({ token: machine.token, max_context_size: 2048 });
    expect(statSync(config).mode & 0o777).toBe(0o600);
    const after = Number(readFileSync(join(prefix, "run", "agent.pid"), "utf8"));
    expect(after).not.toBe(before);
    expect(isAlive(before)).toBe(false);
    expect(await machineState(machine.id)).toBe("online");
  });

  // No systemd runs in this container: stand-ins for systemctl and the user tools record what the script asks and
  // start the unit's ExecStart with its Environment the way systemd would, so the systemd path runs end to end.
  it.runIf(process.getuid?.() === 0)("as root with systemd, switches to a hardened unit running as the makina user (systemd stood in for)", async () => {
    const stand = join(dir, "standins");
    const units = join(dir, "units");
    mkdirSync(stand, { recursive: true });
    mkdirSync(units, { recursive: true });
    const calls = join(dir, "standin-calls");
    const script = (body: string) => `#!/bin/sh\necho "$(basename "$0") $*" >> ${calls}\n${body}\n`;
    const files: Record<string, string> = {
      systemctl: script(`pidfile=${dir}/systemd-agent.pid
stop() { if [ -f "$pidfile" ]; then kill "$(cat "$pidfile")" 2>/dev/null; while kill -0 "$(cat "$pidfile")" 2>/dev/null; do sleep 0.1; done; rm -f "$pidfile"; fi; }
case "$1" in
  restart) stop; unit=${units}/$2
    env "$(sed -n 's/^Environment=//p' "$unit")" $(sed -n 's/^ExecStart=//p' "$unit") </dev/null >>${dir}/systemd-agent.log 2>&1 &
    echo $! > "$pidfile" ;;
  disable) stop ;;
esac`),
      useradd: script(`touch ${dir}/user-created`),
      usermod: script(""),
      chown: script(""),
      // Runs the command as it is (no user makina exists here): what matters is what the script asks.
      runuser: script('shift 3\nexec "$@"'),
      id: script(`if [ "$1" = makina ]; then [ -f ${dir}/user-created ]; exit; fi\nexec /usr/bin/id "$@"`),
    };
    for (const [name, text] of Object.entries(files)) writeFileSync(join(stand, name), text, { mode: 0o755 });
    const rootEnv = { ...env, PATH: `${stand}:${env.PATH}`, MAKINA_SYSTEMD_UNIT_DIR: units };
    const detachedPid = Number(readFileSync(join(prefix, "run", "agent.pid"), "utf8"));
    // The package again (as an upgrade would), so npm runs under the service's user.
    rmSync(join(prefix, "lib", "installed.sha256"));

    const r = await sh(`${machine.install_command} --prefix ${prefix} --service systemd`, { ...rootEnv, MAKINA_MACHINE_TOKEN: machine.token }, 300_000);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toContain("The agent runs as the systemd service makina-agent");
    expect(r.stdout).toContain("This machine is online");
    expect(isAlive(detachedPid)).toBe(false);
    expect(existsSync(join(prefix, "run", "agent.pid"))).toBe(false);
    expect(await machineState(machine.id)).toBe("online");
    const unit = readFileSync(join(units, "makina-agent.service"), "utf8");
    for (const line of [
      "User=makina",
      `Environment=MAKINA_AGENT_CONFIG=${prefix}/etc/agent.json`,
      `ExecStart=${prefix}/bin/makina agent`,
      "Restart=on-failure",
      "NoNewPrivileges=true",
      "ProtectSystem=strict",
      "PrivateTmp=true",
      `ReadWritePaths=${prefix}/data ${prefix}/run ${prefix}/log`,
    ]) {
      expect(unit.split("\n")).toContain(line);
    }
    const asked = readFileSync(calls, "utf8");
    expect(asked).toMatch(/^useradd --system --home-dir \S+\/data --no-create-home --shell \/usr\/sbin\/nologin makina$/m);
    // The config is root's, readable by the service's group; npm ran as the service's user, with no install
    // script but node-llama-cpp's, and the code is root's again after.
    expect(asked).toContain(`chown root:makina ${prefix}/etc/agent.json`);
    expect(asked).toContain(`chown root:makina ${prefix}/etc\n`);
    expect(asked).toMatch(new RegExp(`chown -R makina ${prefix}/lib.new\\nrunuser -u makina -- npm ci --omit=dev --ignore-scripts .*\\nrunuser -u makina -- npm rebuild --loglevel=error node-llama-cpp\\nchown -R root:root ${prefix}/lib.new\\n`));
    expect(statSync(join(prefix, "etc", "agent.json")).mode & 0o777).toBe(0o640);
    expect(asked).toMatch(/systemctl daemon-reload\nsystemctl enable makina-agent.service\nsystemctl restart makina-agent.service/);

    // Back to a detached agent: the unit is stopped, disabled and removed first.
    const back = await sh(`${machine.install_command} --prefix ${prefix} --service detached`, { ...rootEnv, MAKINA_MACHINE_TOKEN: machine.token }, 300_000);
    expect(back.code, back.stdout + back.stderr).toBe(0);
    expect(readFileSync(calls, "utf8")).toContain("systemctl disable --now makina-agent.service");
    expect(existsSync(join(units, "makina-agent.service"))).toBe(false);
    expect(existsSync(join(dir, "systemd-agent.pid"))).toBe(false);
    expect(isAlive(Number(readFileSync(join(prefix, "run", "agent.pid"), "utf8")))).toBe(true);
    expect(await machineState(machine.id)).toBe("online");
  });

  it("--uninstall stops the agent and removes it, keeping downloaded models; --purge removes them too", async () => {
    mkdirSync(join(prefix, "data", "models"), { recursive: true });
    writeFileSync(join(prefix, "data", "models", "kept.gguf"), "weights");
    const pid = Number(readFileSync(join(prefix, "run", "agent.pid"), "utf8"));
    const r = await sh(`curl -fsSLk --pinnedpubkey ${install.pin} ${install.url}/install.sh | sh -s -- --uninstall --prefix ${prefix}`, env);
    expect([r.code, r.stdout.trim()]).toEqual([0, `Makina is uninstalled from ${prefix}; downloaded models are kept in ${prefix}/data (--purge removes them).`]);
    expect(isAlive(pid)).toBe(false);
    expect(readdirSync(prefix)).toEqual(["data"]);
    expect(readFileSync(join(prefix, "data", "models", "kept.gguf"), "utf8")).toBe("weights");
    await vi.waitFor(async () => expect(await machineState(machine.id)).toBe("offline"), { timeout: 10_000, interval: 100 });

    const purge = await sh(`curl -fsSLk --pinnedpubkey ${install.pin} ${install.url}/install.sh | sh -s -- --uninstall --purge --prefix ${prefix}`, env);
    expect([purge.code, purge.stdout.trim()]).toEqual([0, `Makina is uninstalled from ${prefix}, models included.`]);
    expect(existsSync(prefix)).toBe(false);
    const again = await sh(`sh scripts/install.sh --uninstall --prefix ${prefix}`, env);
    expect([again.code, again.stderr.trim()]).toEqual([1, `install.sh: nothing is installed in ${prefix} (pass the --prefix it was installed with)`]);
  });

  it("checks with the relay before installing anything: a wrong or revoked token, or a relay that does not answer, stops it with the relay's words", async () => {
    const other = (await admin("machine", "create", "--org", org, "--name", "checked-box")) as typeof machine;
    const fresh = join(dir, "never-installed");
    // Without a terminal (automation), the token comes from the environment.
    const run = (command: string, token = other.token) => sh(`${command} --prefix ${fresh} --service detached`, { ...env, MAKINA_MACHINE_TOKEN: token });
    const wrong = await run(other.install_command, "mk_mach_notTheRightOne000000000000");
    expect([wrong.code, wrong.stderr.trim()]).toEqual([1, "install.sh: the relay refused this machine: Unknown machine ID or machine token rejected. Nothing was installed."]);

    await admin("machine", "revoke", other.id);
    const revoked = await run(other.install_command);
    expect([revoked.code, revoked.stderr.trim()]).toEqual([1, "install.sh: the relay refused this machine: This machine was revoked; add it again to get a new token. Nothing was installed."]);

    const silent = await run(`MAKINA_MACHINE_TOKEN=${other.token} sh scripts/install.sh ${other.install_command.split(" sh -s -- ")[1]!.replace(/--relay-url \S+/, "--relay-url http://127.0.0.1:9").replace(/--pinned-pubkey \S+/, "")}`);
    expect([silent.code, silent.stderr.trim()]).toEqual([1, "install.sh: the relay at http://127.0.0.1:9 does not answer: check the address, that the relay runs, and the firewall"]);
    expect(existsSync(fresh)).toBe(false);
  });

  it("refuses bad input with a clear message and exit status 2, writing nothing", async () => {
    const fresh = join(dir, "refused");
    const cases: [string, RegExp][] = [
      ["--server relay:8081 --machine-id mach_1", /the machine token: typed when asked on a terminal, or in MAKINA_MACHINE_TOKEN \(or --token-file FILE\)/],
      ["--server relay:8081 --machine-id mach_1 --token-file /nonexistent/token", /cannot read the token file/],
      ["--server relay:8081 --machine-id mach_1 --token mk_mach_1 --relay-url https://relay --pinned-pubkey sha256//short", /44 base64 characters/],
      ["--server relay:8081 --machine-id mach_1 --token mk_mach_1 --relay-url http://127.0.0.1 --pinned-pubkey sha256//AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", /goes with an https/],
      ["--server relay:8081 --machine-id box --token mk_mach_1 --relay-url http://relay", /starts with mach_/],
      ['--server "relay:8081;rm" --machine-id mach_1 --token mk_mach_1 --relay-url http://relay', /hold only letters, digits/],
      ["--server relay:8081 --machine-id mach_1 --token mk_mach_1 --relay-url http://relay --hf-token abc", /starts with hf_/],
      ["--server relay:8081 --machine-id mach_1 --token mk_mach_1 --verbose", /unknown option --verbose/],
      ["--server relay:8081 --machine-id mach_1 --token mk_mach_1 --relay-url http://relay --ca-sha256 abc123", /64 hex digits/],
      ["--server relay:8081 --machine-id mach_1 --token mk_mach_1", /--relay-url \(the agent package comes from the relay\) or --source is required/],
      ["--server relay:8081 --machine-id mach_1 --token mk_mach_1 --relay-url http://relay --service cron", /--service is auto, systemd, launchd, detached or none/],
      ["--server relay:8081 --machine-id mach_1 --token mk_mach_1 --relay-url http://relay --purge", /--purge goes with --uninstall/],
      ["--server relay:8081 --machine-id mach_1 --token mk_mach_1 --relay-url ftp://relay", /http\(s\) URL/],
      ["--server relay:8081 --machine-id mach_1 --token", /--token needs a value/],
      ["--server relay:8081 --machine-id mach_1 --token mk_mach_1 --source /nonexistent/agent.tgz", /--source \/nonexistent\/agent.tgz is not a file/],
    ];
    for (const [args, message] of cases) {
      const r = await sh(`sh scripts/install.sh --prefix ${fresh} ${args}`, env);
      expect([args, r.code, r.stderr]).toEqual([args, 2, expect.stringMatching(message)]);
    }
    expect(existsSync(fresh)).toBe(false);
  });

  it("sends no token to a relay whose key is not the pinned one, nor over plain HTTP on the network, and says why", async () => {
    // An impostor at the relay's address (or the relay with another certificate): a TLS server with a key of its own.
    const certs = operatorCertificates();
    const seen: string[] = [];
    const impostor = createHttpsServer({ cert: readFileSync(certs.cert), key: readFileSync(certs.key) }, (req, res) => {
      seen.push(`${req.method} ${req.url}`);
      res.end("{}");
    });
    await new Promise<void>((resolve) => impostor.listen(0, "127.0.0.1", resolve));
    const url = `https://127.0.0.1:${(impostor.address() as AddressInfo).port}`;
    try {
      const fresh = join(dir, "never-sent");
      const withToken = { ...env, MAKINA_MACHINE_TOKEN: machine.token };
      const r = await sh(`sh scripts/install.sh --relay-url ${url} --pinned-pubkey ${install.pin} --server 127.0.0.1:9 --machine-id ${machine.id} --prefix ${fresh}`, withToken);
      expect([r.code, r.stderr.trim()]).toEqual([
        1,
        `install.sh: the relay at ${url} does not present the key pinned in the install command: it is not the relay that printed it (or its certificate changed). Nothing was sent to it; get a new install command from the relay.`,
      ]);
      // Not a single request reached it: the TLS handshake ended at the key.
      expect(seen).toEqual([]);
      expect(existsSync(fresh)).toBe(false);

      const plain = await sh(`sh scripts/install.sh --relay-url http://relay.example:8080 --server relay.example:8081 --machine-id ${machine.id} --prefix ${fresh}`, withToken);
      expect([plain.code, plain.stderr]).toEqual([1, expect.stringContaining("is plain HTTP on the network: this machine's token would cross it in the clear")]);
      // From a file works as from the environment (here up to the relay's check, with a token it refuses).
      writeFileSync(join(dir, "token"), "mk_mach_notTheRightOne000000000000\n", { mode: 0o600 });
      const fromFile = await sh(`sh scripts/install.sh --relay-url ${install.url} --pinned-pubkey ${install.pin} --server 127.0.0.1:9 --machine-id ${machine.id} --token-file ${join(dir, "token")} --prefix ${fresh}`, env);
      expect([fromFile.code, fromFile.stderr.trim()]).toEqual([1, "install.sh: the relay refused this machine: Unknown machine ID or machine token rejected. Nothing was installed."]);
    } finally {
      impostor.close();
      rmSync(certs.dir, { recursive: true, force: true });
    }
  });

  it("passes shellcheck (Debian's package, which CI installs)", async () => {
    const r = await sh("shellcheck --shell=sh scripts/install.sh", env);
    expect([r.code, r.stdout + r.stderr]).toEqual([0, ""]);
  });
});
