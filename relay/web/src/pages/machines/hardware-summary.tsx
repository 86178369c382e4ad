import type { Hardware } from "../../api/types.js";
import { formatBytes } from "../../components/format.js";

/** GPUs in words: "NVIDIA H100 80GB HBM3, 80 GiB" or "VRAM unknown" when the driver did not say. */
export function gpuText(h: Hardware): string {
  if (h.gpus.length === 0) return "no GPU";
  return h.gpus.map((g) => `${g.model}${g.vram_bytes ? `, ${formatBytes(g.vram_bytes)}` : ", VRAM unknown"}`).join(" · ");
}

/** One machine's hardware on one or two lines, for lists. */
export function HardwareSummary({ hardware }: { hardware: Hardware | null }) {
  if (!hardware) return <span class="muted">Reported when the machine first connects</span>;
  return (
    <span class="hw">
      <span>
        {hardware.os} · {hardware.arch} · {hardware.cpu_logical_cores} CPU threads · {formatBytes(hardware.memory_bytes)} RAM
      </span>
      <span class="muted">
        {gpuText(hardware)}
        {hardware.accelerators.length ? ` · ${hardware.accelerators.join(", ")}` : " · CPU inference"}
      </span>
    </span>
  );
}
