// MAKINA_BENCH_CPU_PROFILE=DIR: a benchmark's process profiles its CPU from its start, and writes
// DIR/NAME-PID.cpuprofile (open it in Chrome's DevTools) when `save` is called, before it exits.
import { writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { join } from "node:path";

export async function cpuProfile(name) {
  const dir = process.env.MAKINA_BENCH_CPU_PROFILE;
  if (!dir) return { save: async () => {} };
  const session = new Session();
  session.connect();
  await session.post("Profiler.enable");
  await session.post("Profiler.start");
  return {
    save: async () => {
      const { profile } = await session.post("Profiler.stop");
      writeFileSync(join(dir, `${name}-${process.pid}.cpuprofile`), JSON.stringify(profile));
    },
  };
}
