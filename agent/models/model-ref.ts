import { isAbsolute, resolve } from "node:path";
import { hfResolveUrl, MakinaError, parseHfRef } from "../../proto/index.js";

/** Where a model comes from. */
export type ModelSource = { kind: "file"; path: string } | { kind: "url"; url: string };

/** Where `hf:` references resolve. */
export const DEFAULT_HF_ENDPOINT = "https://huggingface.co";

/**
 * Parses a model reference: an `https://` URL, `hf:owner/repo/path/file.gguf`
 * (optionally `hf:owner/repo@revision/file.gguf`, resolved against `hfEndpoint`,
 * Hugging Face or a mirror of it), or a local path.
 */
export function parseModelRef(ref: string, cwd = process.cwd(), hfEndpoint = DEFAULT_HF_ENDPOINT): ModelSource {
  if (/^https?:\/\//i.test(ref)) {
    let url: URL;
    try {
      url = new URL(ref);
    } catch {
      throw new MakinaError("invalid_value", `Not a valid model URL: ${ref}`);
    }
    return { kind: "url", url: url.toString() };
  }
  if (ref.startsWith("hf:")) {
    const hf = parseHfRef(ref);
    if (!hf.file) throw new MakinaError("invalid_value", `${ref} names a repository; a file is needed here: hf:owner/repo/file.gguf.`, { param: "model" });
    return { kind: "url", url: hfResolveUrl(hfEndpoint, hf) };
  }
  return { kind: "file", path: isAbsolute(ref) ? ref : resolve(cwd, ref) };
}
