import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { HardwareSource } from "../../agent/hardware/detect-hardware.js";
import { REPO_ROOT } from "./models.js";

/** Machine kinds with a hardware fixture in test/fixtures/hardware. */
export type MachineKind = "nvidia-linux" | "apple-silicon" | "cpu-vm";

/** A hardware source that answers from a fixture; `overrides` replace probes (to make one fail, say). */
export function fixtureSource(kind: MachineKind, overrides: Partial<HardwareSource> = {}): HardwareSource {
  const f = JSON.parse(readFileSync(join(REPO_ROOT, "test", "fixtures", "hardware", `${kind}.json`), "utf8")) as Record<string, unknown> & { platform: string; arch: string };
  const answer = <T>(key: string) => async () => f[key] as T;
  return {
    platform: f.platform,
    arch: f.arch,
    osInfo: answer("osInfo"),
    cpu: answer("cpu"),
    mem: answer("mem"),
    graphics: answer("graphics"),
    fsSize: answer("fsSize"),
    gpuBackends: answer("gpuBackends"),
    ...overrides,
  };
}
