#!/usr/bin/env node
// Records this machine's hardware as a test fixture (node scripts/record-hardware.mjs NAME [--description TEXT] [--dir DIR]).
// Writes test/fixtures/hardware/NAME.json with what the agent's hardware probes see here: systeminformation's
// osInfo, cpu, mem, graphics and fsSize, and node-llama-cpp's usable GPU backends. On Linux it also keeps the raw
// output of `lspci -vvv` and of nvidia-smi's query (NAME.lspci.txt, NAME.nvidia-smi.csv), so the tests replay the
// GPU probe through systeminformation's own parser (test/helpers/hardware-fixtures.ts). Review those two files
// before committing them: unlike NAME.json, they are kept as the tools printed them.
// Run it on a machine of a kind the tests do not cover yet, then add the kind to MachineKind and a test.
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { arch, platform } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import si from "systeminformation";
import { getLlamaGpuTypes } from "node-llama-cpp";

const NVIDIA_QUERY = [
  "--query-gpu=driver_version,pci.sub_device_id,name,pci.bus_id,fan.speed,memory.total,memory.used,memory.free,utilization.gpu,utilization.memory,temperature.gpu,temperature.memory,power.draw,power.limit,clocks.gr,clocks.mem",
  "--format=csv,noheader,nounits",
];

const args = process.argv.slice(2);
const name = args[0];
if (!name || !/^[a-z0-9][a-z0-9-]*$/.test(name)) {
  console.error("usage: node scripts/record-hardware.mjs NAME [--description TEXT] [--dir DIR]   (NAME: lowercase letters, digits, dashes)");
  process.exit(2);
}
const d = args.indexOf("--description");
const description = d >= 0 ? args[d + 1] : `Recorded with scripts/record-hardware.mjs on ${new Date().toISOString().slice(0, 10)}`;
const o = args.indexOf("--dir");
const dir = o >= 0 ? resolve(args[o + 1]) : join(dirname(fileURLToPath(import.meta.url)), "..", "test", "fixtures", "hardware");

/** A command's stdout, or null when it is missing or fails (that is what the fixture then records). */
function run(cmd, cmdArgs) {
  try {
    return execFileSync(cmd, cmdArgs, { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"], timeout: 20_000 });
  } catch {
    return null;
  }
}

/** The same value without identifying fields (serial numbers, UUIDs, host names): fixtures are committed. */
function anonymous(value) {
  if (Array.isArray(value)) return value.map(anonymous);
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(Object.entries(value).filter(([k]) => !/serial|uuid|hostname|fqdn/i.test(k)).map(([k, v]) => [k, anonymous(v)]));
}

const fixture = anonymous({
  description,
  platform: platform(),
  arch: arch(),
  osInfo: await si.osInfo(),
  cpu: await si.cpu(),
  mem: await si.mem(),
  graphics: await si.graphics(),
  fsSize: await si.fsSize(),
  gpuBackends: (await getLlamaGpuTypes("supported")).filter((t) => t !== false),
});
if (platform() === "linux") {
  const lspci = run("lspci", ["-vvv"]);
  if (lspci !== null) {
    writeFileSync(join(dir, `${name}.lspci.txt`), lspci);
    const smi = run("nvidia-smi", NVIDIA_QUERY);
    if (smi !== null) writeFileSync(join(dir, `${name}.nvidia-smi.csv`), smi);
    fixture.graphicsReplay = { lspci: `${name}.lspci.txt`, nvidiaSmi: smi === null ? null : `${name}.nvidia-smi.csv` };
  }
}
writeFileSync(join(dir, `${name}.json`), `${JSON.stringify(fixture, null, 2)}\n`);
console.log(`wrote ${join(dir, `${name}.json`)}${fixture.graphicsReplay ? " with the raw lspci/nvidia-smi output beside it" : ""}`);
