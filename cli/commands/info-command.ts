import type { CommandModule } from "yargs";
import { humanBytes, keyValues, print } from "../output.js";
import { localOptions, requireStatus, type LocalArgs } from "./local-agent.js";

/** "NVIDIA A100-SXM4-80GB, 80 GiB, driver 550.54.15"; the vendor only when the model does not already say it. */
function gpuLabel(g: { vendor: string; model: string; vramBytes: number; driverVersion: string }): string {
  const brand = g.vendor.split(/[\s,]/)[0] ?? "";
  const name = brand && g.model.toLowerCase().startsWith(brand.toLowerCase()) ? g.model : `${g.vendor} ${g.model}`.trim();
  const vram = g.vramBytes ? humanBytes(g.vramBytes) : /nvidia/i.test(g.vendor) ? "VRAM unknown" : "";
  return [name, vram, g.driverVersion && `driver ${g.driverVersion}`].filter(Boolean).join(", ");
}

export const infoCommand: CommandModule = {
  command: "info",
  describe: "Show this machine's agent: id, relay, link, version, hardware",
  builder: (y) => localOptions(y),
  handler: async (raw) => {
    const argv = raw as unknown as LocalArgs;
    const s = await requireStatus(argv);
    const h = s.hardware;
    const info = {
      machine_id: s.machineId,
      relay: s.server,
      link: s.link.state,
      link_error: s.link.lastError,
      agent_version: s.agentVersion,
      hardware: {
        os: h.os,
        platform: h.platform,
        arch: h.arch,
        cpu: h.cpuModel,
        cpu_cores: h.cpuPhysicalCores,
        cpu_threads: h.cpuLogicalCores,
        memory_bytes: h.memoryBytes,
        gpus: h.gpus.map((g) => ({ vendor: g.vendor, model: g.model, vram_bytes: g.vramBytes, driver: g.driverVersion })),
        accelerators: s.accelerators,
        disk: s.disk && { path: s.disk.path, free_bytes: s.disk.freeBytes, size_bytes: s.disk.sizeBytes },
      },
    };
    print(argv, info, () =>
      keyValues([
        ["machine", s.machineId],
        ["relay", s.server],
        ["link", s.link.state === "online" ? "online" : `${s.link.state}${s.link.lastError ? ` (${s.link.lastError})` : ""}`],
        ["agent", s.agentVersion],
        ["os", `${h.os} (${h.platform}/${h.arch})`],
        ["cpu", `${h.cpuModel}, ${h.cpuPhysicalCores} cores / ${h.cpuLogicalCores} threads`],
        ["memory", humanBytes(h.memoryBytes)],
        ["gpus", h.gpus.length ? h.gpus.map(gpuLabel).join("; ") : "none"],
        ["accelerators", s.accelerators.length ? s.accelerators.join(", ") : "none (CPU inference)"],
        ["disk", s.disk ? `${humanBytes(s.disk.freeBytes)} free of ${humanBytes(s.disk.sizeBytes)} on ${s.disk.path}` : "unknown"],
      ]),
    );
  },
};
