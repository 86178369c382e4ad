import { MakinaError } from "../errors/index.js";

/** A Hugging Face repository, or a file in one: `hf:owner/repo[@revision][/path/file]`. */
export interface HfRef {
  owner: string;
  repo: string;
  revision: string;
  /** The file's path in the repository, `/`-separated; empty for the repository itself (what vLLM and MLX take). */
  file: string;
}

/**
 * Parses an `hf:` reference, refusing anything that could name more than a file of the repository: every part
 * is a plain name (letters, digits and `_ . + = @ , -`, not beginning with `-`), never empty, `.` or `..` (which a URL resolves away,
 * reaching other paths of the hub), with no escapes, queries or fragments. Throws `invalid_value` (param `model`).
 */
export function parseHfRef(ref: string): HfRef {
  const m = /^hf:([^/@]+)\/([^/@]+)(?:@([^/@]+))?(?:\/([^@]+))?$/.exec(ref);
  const segments = m ? [m[1]!, m[2]!, m[3] ?? "main", ...(m[4] === undefined ? [] : m[4].split("/"))] : [];
  // A part never begins with "-": a tool given it as an argument would read it as an option.
  if (!m || segments.some((seg) => seg === "" || seg === "." || seg === ".." || seg.startsWith("-") || !/^[\w.+=@,-]+$/.test(seg))) {
    throw new MakinaError(
      "invalid_value",
      `Not a valid Hugging Face reference: ${JSON.stringify(ref)} (expected hf:owner/repo[@revision][/path/file.gguf], each part a plain name of letters, digits and _ . + = @ , -, never . or .., never beginning with -).`,
      { param: "model" },
    );
  }
  return { owner: m[1]!, repo: m[2]!, revision: m[3] ?? "main", file: m[4] ?? "" };
}

/** Where the hub at `endpoint` (Hugging Face or a mirror) serves the file an `hf:` reference names. */
export function hfResolveUrl(endpoint: string, ref: HfRef): string {
  const path = `${ref.owner}/${ref.repo}/resolve/${encodeURIComponent(ref.revision)}/${ref.file.split("/").map(encodeURIComponent).join("/")}`;
  return new URL(path, endpoint.endsWith("/") ? endpoint : `${endpoint}/`).toString();
}
