// Builds what a relay serves to machines that join it (run by `npm run build`, after tsc):
//   dist/install/install.sh                    the install script (scripts/install.sh as it is)
//   dist/install/makina-agent-<version>.tgz    the agent package of this version, made with `npm pack`
// The agent package holds the compiled agent, CLI and shared protocol code (no relay, no web application)
// and depends only on what they import, at the exact versions package-lock.json tested, with their whole tree
// and its integrity hashes in an npm-shrinkwrap.json, so a worker installs from the relay and the npm registry
// exactly what the relay was tested with, and none of the relay's native modules.
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

/**
 * The agent's whole dependency tree as package-lock.json has it (the same versions, paths and integrity hashes),
 * for the package's npm-shrinkwrap.json: npm installs a package's shrinkwrapped tree exactly, and checks each
 * tarball against its hash, so a machine gets the tree the relay's tests ran and nothing a registry swapped.
 * Walked the way Node resolves a name (the package's own node_modules first, then each folder above it);
 * a package reached only through optional dependencies (node-llama-cpp's builds for other platforms) stays
 * optional.
 */
function agentShrinkwrap(rootDependencies) {
  const packages = lock.packages ?? {};
  const resolve = (from, name) => {
    for (let base = from; ; base = base.slice(0, Math.max(0, base.lastIndexOf("/node_modules/")))) {
      const path = `${base ? `${base}/` : ""}node_modules/${name}`;
      if (packages[path]) return path;
      if (!base) return undefined;
    }
  };
  const edges = (path, withOptional) => {
    const entry = packages[path];
    const optionalPeers = entry.peerDependenciesMeta ?? {};
    const names = [...Object.keys(entry.dependencies ?? {}), ...Object.keys(entry.peerDependencies ?? {}).filter((n) => !optionalPeers[n]?.optional)];
    return withOptional ? [...names, ...Object.keys(entry.optionalDependencies ?? {})] : names;
  };
  const walk = (withOptional) => {
    const seen = new Set();
    const queue = rootDependencies.map((name) => ["", name, false]);
    while (queue.length) {
      const [from, name, optional] = queue.shift();
      const path = resolve(from, name);
      if (!path) {
        if (optional) continue;
        throw new Error(`pack-agent: ${name} (needed from ${from || "the agent"}) is not in package-lock.json; run npm install`);
      }
      if (seen.has(path)) continue;
      seen.add(path);
      const optionals = new Set(Object.keys(packages[path].optionalDependencies ?? {}));
      for (const dep of edges(path, withOptional)) queue.push([path, dep, optionals.has(dep)]);
    }
    return seen;
  };
  const required = walk(false);
  const all = walk(true);
  const tree = {};
  for (const path of [...all].sort()) {
    const { dev, devOptional, optional, peer, ...entry } = packages[path];
    tree[path] = required.has(path) ? entry : { ...entry, optional: true };
  }
  return tree;
}

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
  const manifest = JSON.parse(readFileSync(join(stage, "package.json"), "utf8"));
  writeFileSync(
    join(stage, "npm-shrinkwrap.json"),
    JSON.stringify(
      {
        name: manifest.name,
        version: manifest.version,
        lockfileVersion: 3,
        requires: true,
        packages: { "": { name: manifest.name, version: manifest.version, license: manifest.license, dependencies, bin: manifest.bin, engines: manifest.engines }, ...agentShrinkwrap(Object.keys(dependencies)) },
      },
      null,
      2,
    ) + "\n",
  );
  writeFileSync(join(stage, "README.md"), "# makina-agent\n\nInstalled by a Makina relay's install script: the one-line command its Machines page (or `makina admin machine create`) prints. See the Makina README.\n");
  execFileSync("npm", ["pack", "--silent", "--pack-destination", out], { cwd: stage, stdio: ["ignore", "ignore", "inherit"] });
} finally {
  rmSync(stage, { recursive: true, force: true });
}
