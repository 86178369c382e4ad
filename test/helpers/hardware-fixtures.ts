import { execFile } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import type { HardwareSource } from "../../agent/hardware/detect-hardware.js";
import { queryNvidiaSmi } from "../../agent/hardware/nvidia-smi.js";
import { REPO_ROOT } from "./models.js";

/**
 * Machine kinds with a hardware fixture in test/fixtures/hardware. cpu-vm is recorded on the CI machine with
 * scripts/record-hardware.mjs; the others are stand-ins for machines CI cannot reach (each file says how it was made).
 */
export type MachineKind = "nvidia-linux" | "nvidia-no-driver" | "apple-silicon" | "cpu-vm" | "nvidia-h100";

export const HARDWARE_FIXTURES = join(REPO_ROOT, "test", "fixtures", "hardware");
/** Recordings of real machines in ../shared/hardware (nvidia-h100: a real H100 server without lspci). */
export const SHARED_HARDWARE = join(REPO_ROOT, "..", "shared", "hardware");
const STANDINS = join(REPO_ROOT, "test", "fixtures", "standins", "hardware");

export interface Fixture {
  platform: string;
  arch: string;
  graphics?: unknown;
  /** Raw `lspci -vvv` and nvidia-smi output, replayed through systeminformation's own parser. */
  graphicsReplay?: { lspci: string; nvidiaSmi: string | null };
  [probe: string]: unknown;
}

/**
 * Runs systeminformation's real `graphics()` in a child process whose PATH puts the stand-in `lspci` and
 * `nvidia-smi` first; they print the recorded output, or fail as nvidia-smi does without its driver.
 */
async function replayGraphics(dir: string, replay: NonNullable<Fixture["graphicsReplay"]>): Promise<unknown> {
  const script = 'import si from "systeminformation"; process.stdout.write(JSON.stringify(await si.graphics()));';
  const { stdout } = await promisify(execFile)(process.execPath, ["--input-type=module", "-e", script], { cwd: REPO_ROOT, env: standinHardwareEnv(dir, replay), timeout: 30_000 });
  return JSON.parse(stdout);
}

/** The environment under which `lspci` and `nvidia-smi` are the stand-ins replaying `replay`'s files from `dir`. */
export function standinHardwareEnv(dir: string, replay: NonNullable<Fixture["graphicsReplay"]>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    PATH: [STANDINS, dirname(process.execPath), "/usr/bin", "/bin"].join(":"),
    LC_ALL: "C",
    STANDIN_LSPCI_OUTPUT: join(dir, replay.lspci),
  };
  if (replay.nvidiaSmi) env.STANDIN_NVIDIA_SMI_OUTPUT = join(dir, replay.nvidiaSmi);
  return env;
}

/**
 * The environment under which `nvidia-smi` is the stand-in answering with `csvFile` (the recorded query's fields;
 * rewrite the file to change what it says next), or failing as without a driver when `csvFile` is null.
 */
export function standinNvidiaSmiEnv(csvFile: string | null): NodeJS.ProcessEnv {
  return { PATH: [STANDINS, "/usr/bin", "/bin"].join(":"), LC_ALL: "C", ...(csvFile ? { STANDIN_NVIDIA_SMI_OUTPUT: csvFile } : {}) };
}

/** A hardware source that answers from a fixture; `overrides` replace probes (to make one fail, say). */
export function fixtureSource(kind: MachineKind, overrides: Partial<HardwareSource> = {}): HardwareSource {
  return fixtureFileSource(join(kind === "nvidia-h100" ? SHARED_HARDWARE : HARDWARE_FIXTURES, `${kind}.json`), overrides);
}

/** The same, for a fixture file anywhere (one scripts/record-hardware.mjs just wrote, say). */
export function fixtureFileSource(file: string, overrides: Partial<HardwareSource> = {}): HardwareSource {
  const f = JSON.parse(readFileSync(file, "utf8")) as Fixture;
  const answer = <T>(key: string) => async () => f[key] as T;
  const replay = f.graphicsReplay;
  // nvidia-smi's recorded answer sits beside the fixture as NAME.nvidia-smi.csv; the stand-in replays it
  // (and fails as nvidia-smi does without a driver when there is none).
  const smiFile = replay?.nvidiaSmi ? join(dirname(file), replay.nvidiaSmi) : file.replace(/\.json$/, ".nvidia-smi.csv");
  const smiEnv: NodeJS.ProcessEnv = { PATH: [STANDINS, "/usr/bin", "/bin"].join(":"), LC_ALL: "C", ...(existsSync(smiFile) ? { STANDIN_NVIDIA_SMI_OUTPUT: smiFile } : {}) };
  return {
    platform: f.platform,
    arch: f.arch,
    osInfo: answer("osInfo"),
    cpu: answer("cpu"),
    mem: answer("mem"),
    graphics: replay ? () => replayGraphics(dirname(file), replay) as ReturnType<HardwareSource["graphics"]> : answer("graphics"),
    fsSize: answer("fsSize"),
    gpuBackends: async () => (f.gpuBackends as string[] | null) ?? [],
    nvidiaSmi: () => (f.platform === "darwin" ? Promise.resolve(null) : queryNvidiaSmi({ env: smiEnv })),
    ...overrides,
  };
}
