// Builds what a relay serves to machines that join it (run by `npm run build`, after tsc):
//   dist/install/install.sh                    the install script (scripts/install.sh as it is)
//   dist/install/makina-agent-<version>.tgz    the agent package of this version, made with `npm pack`
// The agent package holds the compiled agent, CLI and shared protocol code (no relay, no web application)
// and depends only on what they import, at the exact versions package-lock.json tested, so a worker
// installs it from the relay and the npm registry without the relay's native modules.
import { execFileSync } from "node:child_process";
import { copyFileSync, cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
const lock = JSON.parse(readFileSync(join(root, "package-lock.json"), "utf8"));

// What the agent, the CLI and proto/ import at run time (test/architecture.test.ts keeps the list honest).
const dependencies = Object.fromEntries(
  pkg.agentPackage.dependencies.map((name) => {
    const version = lock.packages?.[`node_modules/${name}`]?.version;
    if (!version) throw new Error(`pack-agent: ${name} is not in package-lock.json; run npm install`);
    return [name, version];
  }),
);

const out = join(root, "dist", "install");
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
copyFileSync(join(root, "scripts", "install.sh"), join(out, "install.sh"));

const stage = mkdtempSync(join(tmpdir(), "makina-agent-pack-"));
try {
  for (const dir of ["agent", "cli", "proto"]) {
    cpSync(join(root, "dist", dir), join(stage, "dist", dir), { recursive: true, filter: (src) => !src.endsWith(".map") });
  }
  writeFileSync(
    join(stage, "package.json"),
    JSON.stringify(
      {
        name: "makina-agent",
        version: pkg.version,
        description: "The Makina agent: joins this machine to a Makina relay and serves models from it.",
        type: "module",
        license: pkg.license,
        engines: pkg.engines,
        bin: { makina: "dist/cli/main.js" },
        dependencies,
      },
      null,
      2,
    ) + "\n",
  );
  writeFileSync(join(stage, "README.md"), "# makina-agent\n\nInstalled by a Makina relay's install script (`curl -fsSL https://RELAY/install.sh | sh -s -- …`). See the Makina README.\n");
  execFileSync("npm", ["pack", "--silent", "--pack-destination", out], { cwd: stage, stdio: ["ignore", "ignore", "inherit"] });
} finally {
  rmSync(stage, { recursive: true, force: true });
}
