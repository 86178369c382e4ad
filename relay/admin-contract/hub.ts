import { z } from "zod";
import { answer, route } from "./route.js";
import { orgRef } from "./fields.js";
import type { List } from "./list.js";
import type { Compatibility } from "./stacks.js";

/** A repository of the model hub, as a search finds it. */
export interface HubRepo {
  /** `owner/name`. */
  id: string;
  downloads: number;
  likes: number;
  /** Its licence as the hub tags it, or null. */
  license: string | null;
  /** The runtimes its files suit: `gguf` (GGUF files), `mlx` (an MLX repository, for Macs), `vllm` (safetensors). */
  runtimes: ("gguf" | "mlx" | "vllm")[];
  /** The hub asks people to accept terms first: the relay's hub token must be allowed. */
  gated: boolean;
}

/** One GGUF file of a repository (a split file's parts as one), judged by the compatibility rules. */
export interface HubFile {
  /** Its path in the repository (a split file's first part). */
  path: string;
  /** What a stack's model field takes: `hf:owner/name/path`. */
  model: string;
  /** The quantization its name says (`Q4_K_M`, `F16`…), or null. */
  quantization: string | null;
  size_bytes: number | null;
  /** How many files it is split into (1: whole). */
  parts: number;
  /** The compatibility panel's verdict for the machine asked (`?machine=`), or null when none was asked. */
  compatibility: Compatibility | null;
  /** On how many of the organization's machines (`of`) the rules let it run as a GGUF stack. */
  fits: { machines: number; of: number };
}

/** A repository with its GGUF files. */
export interface HubRepoFiles {
  repo: HubRepo;
  /** The machine the files were judged for, or null. */
  machine: string | null;
  files: HubFile[];
}

export const HUB_ROUTES = {
  /** Repositories of the configured hub whose name matches `q`, most downloaded first (any member). */
  "GET /admin/v1/hub/search": route({
    query: z.strictObject({ org: orgRef(), q: z.string().trim().min(1, { error: "q: give words to search for" }).max(200, { error: "q: at most 200 characters" }) }),
    response: answer<List<HubRepo>>(),
  }),
  /** One repository's GGUF files, each judged for `machine` and across the organization's machines (any member). */
  "GET /admin/v1/hub/repos/:owner/:name": route({
    query: z.strictObject({ org: orgRef(), machine: z.string().max(200).optional() }),
    response: answer<HubRepoFiles>(),
  }),
} as const;
