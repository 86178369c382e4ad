#!/usr/bin/env node
// Regenerates proto/generated from proto/*.proto with buf (from npm) and ts-proto.
// With --check, generates into a temporary folder and fails when the checked-in
// output differs, so CI catches hand edits and stale output.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, cpSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const outDir = join(root, "proto", "generated");
const check = process.argv.includes("--check");
const work = mkdtempSync(join(tmpdir(), "makina-proto-"));

function listFiles(dir, prefix = "") {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? listFiles(join(dir, e.name), join(prefix, e.name)) : [join(prefix, e.name)],
  );
}

try {
  const template = readFileSync(join(root, "buf.gen.yaml"), "utf8").replace("out: proto/generated", `out: ${join(work, "out")}`);
  const templatePath = join(work, "buf.gen.yaml");
  writeFileSync(templatePath, template);
  execFileSync(join(root, "node_modules", ".bin", "buf"), ["generate", "--template", templatePath], { cwd: root, stdio: "inherit" });
  const fresh = join(work, "out");
  if (check) {
    const a = listFiles(fresh).sort();
    const b = listFiles(outDir).sort();
    const differs = a.join("\n") !== b.join("\n") || a.some((f) => readFileSync(join(fresh, f), "utf8") !== readFileSync(join(outDir, f), "utf8"));
    if (differs) {
      console.error("proto/generated is stale or was edited by hand: run `npm run gen:proto` and commit the result.");
      process.exit(1);
    }
    console.error("proto/generated matches a fresh generation.");
  } else {
    rmSync(outDir, { recursive: true, force: true });
    cpSync(fresh, outDir, { recursive: true });
    console.error(`generated ${listFiles(outDir).join(", ")}`);
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
