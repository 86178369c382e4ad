// Preloaded by `node --require` (through NODE_OPTIONS, which does not take --cpu-prof) into the GGUF benchmark's
// gateway process and, through its environment, the model process the agent starts. On SIGUSR2 it starts
// profiling the process's CPU (so that start-up is left out); as the process exits it writes what it sampled to
// BENCH_CPU_PROF_DIR/PID.cpuprofile, the format of `--cpu-prof` (open it in Chrome's DevTools).
const { Session } = require("node:inspector");
const { writeFileSync } = require("node:fs");
const { join } = require("node:path");

const dir = process.env.BENCH_CPU_PROF_DIR;
if (dir) {
  const session = new Session();
  session.connect();
  let started = false;
  process.on("SIGUSR2", () => {
    if (started) return;
    started = true;
    session.post("Profiler.enable");
    session.post("Profiler.setSamplingInterval", { interval: 100 });
    session.post("Profiler.start");
  });
  // A session in the process's own thread answers at once: the profile is written before the process ends.
  process.on("exit", () => {
    if (!started) return;
    session.post("Profiler.stop", (err, result) => {
      if (err) process.stderr.write(`cpu-prof-preload: ${err.message}\n`);
      else writeFileSync(join(dir, `${process.pid}.cpuprofile`), JSON.stringify(result.profile));
    });
  });
}
