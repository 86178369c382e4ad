import type { HubRepo } from "../admin-contract/index.js";

export type { HubRepo };

/** One model file of a repository as the Forge offers it: a GGUF file, or the parts of one split GGUF file as one. */
export interface HubFile {
  /** The file's path in the repository (a split file's first part). */
  path: string;
  /** The quantization its name says (`Q4_K_M`, `F16`…), or null. */
  quantization: string | null;
  /** Its size in bytes (a split file's parts together), or null when the hub did not say. */
  sizeBytes: number | null;
  /** How many parts it is split into (1: whole). */
  parts: number;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const count = (v: unknown): number => (typeof v === "number" && Number.isSafeInteger(v) && v >= 0 ? v : 0);
/** A repository id as the hub spells them: owner and name of letters, digits, `-`, `_`, `.`. */
export const REPO_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,95}\/[A-Za-z0-9][A-Za-z0-9._-]{0,95}$/;

/** A repository from a search answer's entry or a repository's own answer; undefined when it is not one. */
export function readHubRepo(v: unknown): HubRepo | undefined {
  if (!isObject(v) || typeof v.id !== "string" || !REPO_ID.test(v.id)) return undefined;
  const tags = Array.isArray(v.tags) ? v.tags.filter((t): t is string => typeof t === "string" && t.length <= 200) : [];
  const library = typeof v.library_name === "string" ? v.library_name : "";
  const siblings = Array.isArray(v.siblings) ? v.siblings : [];
  const names = siblings.flatMap((s) => (isObject(s) && typeof s.rfilename === "string" ? [s.rfilename] : []));
  const runtimes: HubRepo["runtimes"] = [];
  if (tags.includes("gguf") || library === "gguf" || names.some((n) => /\.gguf$/i.test(n))) runtimes.push("gguf");
  if (tags.includes("mlx") || library === "mlx") runtimes.push("mlx");
  else if (tags.includes("safetensors") || names.some((n) => /\.safetensors$/i.test(n))) runtimes.push("vllm");
  const licenseTag = tags.find((t) => t.startsWith("license:"));
  const card = isObject(v.cardData) && typeof v.cardData.license === "string" ? v.cardData.license : null;
  return {
    id: v.id,
    downloads: count(v.downloads),
    likes: count(v.likes),
    license: (licenseTag?.slice("license:".length) ?? card)?.slice(0, 100) ?? null,
    runtimes,
    gated: v.gated === true || v.gated === "auto" || v.gated === "manual",
  };
}

/** A GGUF file name's quantization: `model.Q4_K_M.gguf`, `model-IQ3_XXS.gguf`, `model-f16.gguf`. */
export function quantizationOf(path: string): string | null {
  const name = path.slice(path.lastIndexOf("/") + 1);
  const m = /(?:^|[-._])((?:I?Q\d(?:_[A-Z0-9]+)*)|BF16|F16|F32|FP16|FP32)(?=[-._])/i.exec(name.replace(/-\d{5}-of-\d{5}\.gguf$/i, ".gguf"));
  return m ? m[1]!.toUpperCase() : null;
}

/** A split GGUF file's part: `…-00001-of-00003.gguf`. */
const PART = /^(.*)-(\d{5})-of-(\d{5})\.gguf$/i;

/**
 * A repository's GGUF files from its answer's `siblings` (with `size`, as `?blobs=true` gives them), the parts of
 * a split file as one (named by its first part, its size their sum), sorted by path. Other files are left out.
 */
export function readGgufFiles(v: unknown): HubFile[] {
  const siblings = isObject(v) && Array.isArray(v.siblings) ? v.siblings : [];
  const whole: HubFile[] = [];
  const split = new Map<string, { first: string | null; parts: number; seen: number; size: number | null }>();
  for (const s of siblings) {
    if (!isObject(s) || typeof s.rfilename !== "string" || s.rfilename.length > 500 || !/\.gguf$/i.test(s.rfilename)) continue;
    const path = s.rfilename;
    const size = typeof s.size === "number" && Number.isSafeInteger(s.size) && s.size >= 0 ? s.size : isObject(s.lfs) && typeof s.lfs.size === "number" && Number.isSafeInteger(s.lfs.size) ? s.lfs.size : null;
    const part = PART.exec(path);
    if (!part) {
      whole.push({ path, quantization: quantizationOf(path), sizeBytes: size, parts: 1 });
      continue;
    }
    const group = split.get(part[1]!) ?? { first: null, parts: Number(part[3]), seen: 0, size: 0 };
    if (Number(part[2]) === 1) group.first = path;
    group.seen++;
    group.size = group.size === null || size === null ? null : group.size + size;
    split.set(part[1]!, group);
  }
  for (const g of split.values()) {
    // A split file offered only whole: every part there, its first among them.
    if (g.first && g.seen === g.parts) whole.push({ path: g.first, quantization: quantizationOf(g.first), sizeBytes: g.size, parts: g.parts });
  }
  return whole.sort((a, b) => a.path.localeCompare(b.path));
}
