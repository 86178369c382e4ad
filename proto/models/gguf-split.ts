import { MakinaError } from "../errors/index.js";

/** How llama.cpp names the parts of a split GGUF model: `name-00001-of-00003.gguf`. */
const SPLIT_PART = /-(\d{5})-of-(\d{5})\.gguf$/i;

/** The most parts a split model may have (gguf-split makes a few to a few dozen). */
export const MOST_SPLIT_PARTS = 256;

/**
 * The URLs of every part of a split GGUF model, when `url` names its first part (`…-00001-of-00003.gguf`); undefined
 * for a whole file. A later part is refused: the model is named by its first, and the agent pulls them all.
 */
export function splitPartUrls(url: string): string[] | undefined {
  // The parts' names differ from the first's by their numbers alone, which need no escaping in a URL's path.
  return splitPartNames(new URL(url).pathname, url)?.map((name) => {
    const part = new URL(url);
    part.pathname = name;
    return part.toString();
  });
}

/** The paths (or URL paths) of every part of a split model whose first part is `path`; undefined for a whole file. */
export function splitPartNames(path: string, named = path): string[] | undefined {
  const m = SPLIT_PART.exec(path);
  if (!m) return undefined;
  const [part, parts] = [Number(m[1]), Number(m[2])];
  if (parts <= 1 && part === 1) return undefined;
  if (part < 1 || parts < 1 || part > parts || parts > MOST_SPLIT_PARTS) throw new MakinaError("invalid_value", `${named} is not a part of a split model the agent can pull (part ${part} of ${parts}; at most ${MOST_SPLIT_PARTS} parts).`, { param: "model" });
  const stem = path.slice(0, m.index);
  if (part !== 1) throw new MakinaError("invalid_value", `${named} is part ${part} of ${parts} of a split model: name its first part (${stem.split("/").at(-1)}-00001-of-${m[2]}.gguf), and every part is pulled.`, { param: "model" });
  return Array.from({ length: parts }, (_, i) => `${stem}-${String(i + 1).padStart(5, "0")}-of-${m[2]}.gguf`);
}
