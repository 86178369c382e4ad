// Builds the web application (relay/web) into dist/web: one hashed JS bundle and one hashed
// CSS file under assets/, and index.html naming them. No CDN: everything is served by the relay.
import { build } from "esbuild";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { brotliCompressSync, constants as zlibConstants, gzipSync } from "node:zlib";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const out = join(root, "dist", "web");
rmSync(out, { recursive: true, force: true });
mkdirSync(join(out, "assets"), { recursive: true });

const result = await build({
  entryPoints: [join(root, "relay", "web", "src", "main.tsx")],
  bundle: true,
  minify: true,
  sourcemap: "linked",
  format: "esm",
  target: ["es2022"],
  jsx: "automatic",
  jsxImportSource: "preact",
  outdir: join(out, "assets"),
  entryNames: "[name]-[hash]",
  metafile: true,
  logLevel: "warning",
  legalComments: "none",
  // Served as UTF-8 (relay/http/web/web-app.ts): its text's arrows and dashes as themselves, not as \u escapes.
  charset: "utf8",
});
const outputs = Object.keys(result.metafile.outputs).map((p) => basename(p));
const js = outputs.find((f) => f.endsWith(".js"));
const css = outputs.find((f) => f.endsWith(".css"));
if (!js || !css) throw new Error(`web build produced ${outputs.join(", ")}`);
const html = readFileSync(join(root, "relay", "web", "index.html"), "utf8").replace("%SCRIPT%", `/assets/${js}`).replace("%STYLE%", `/assets/${css}`);
writeFileSync(join(out, "index.html"), html);
// Each asset compressed beside it (brotli at its best, gzip at its best): the relay sends the one a browser takes,
// and the bytes it serves are read once, at start (relay/http/web/web-app.ts).
for (const file of [js, css]) {
  const raw = readFileSync(join(out, "assets", file));
  writeFileSync(join(out, "assets", `${file}.br`), brotliCompressSync(raw, { params: { [zlibConstants.BROTLI_PARAM_QUALITY]: 11, [zlibConstants.BROTLI_PARAM_SIZE_HINT]: raw.length } }));
  writeFileSync(join(out, "assets", `${file}.gz`), gzipSync(raw, { level: 9 }));
}
