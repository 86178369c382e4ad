import { readFileSync } from "node:fs";
import { hashSecret } from "../keys/index.js";

/** The hash of the scrape token in `file` (16 characters or more, surrounding whitespace ignored). */
export function readMetricsToken(file: string): string {
  let token: string;
  try {
    token = readFileSync(file, "utf8").trim();
  } catch (err) {
    throw new Error(`cannot read ${file} (${(err as Error).message})`);
  }
  if (token.length < 16) throw new Error(`the token in ${file} must be 16 characters or more (openssl rand -hex 32 > ${file})`);
  return hashSecret(token);
}
