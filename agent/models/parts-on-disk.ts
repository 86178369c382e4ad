import { stat } from "node:fs/promises";
import { MakinaError, splitPartNames } from "../../proto/index.js";

/**
 * The files of a model on this machine's disk, with their sizes: the file itself, or every part of a split model
 * named by its first (llama.cpp reads them beside it). A part missing is refused, naming it.
 */
export async function partsOnDisk(path: string): Promise<{ path: string; size: number }[]> {
  const parts = splitPartNames(path) ?? [path];
  const out: { path: string; size: number }[] = [];
  for (const part of parts) {
    const info = await stat(part).catch(() => undefined);
    if (!info?.isFile()) throw new MakinaError("not_found", part === path ? `Model file not found: ${path}` : `Model file not found: ${part} (a part of the split model ${path}).`, { param: "model" });
    out.push({ path: part, size: info.size });
  }
  return out;
}
