import { readdirSync, readFileSync } from "node:fs";
import { join, relative, resolve, dirname } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "./helpers/models.js";

/** Which top-level areas each area may import: agent → proto, relay → proto, cli → all. */
const ALLOWED: Record<string, string[]> = {
  proto: ["proto"],
  agent: ["agent", "proto"],
  relay: ["relay", "proto"],
  cli: ["cli", "agent", "relay", "proto"],
};

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return e.name === "node_modules" ? [] : sources(p);
    return /\.tsx?$/.test(e.name) ? [p] : [];
  });
}

/** Every file under `dir` (node_modules left out). */
function allFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return e.name === "node_modules" ? [] : allFiles(p);
    return [p];
  });
}

const WEB = join(REPO_ROOT, "relay", "web");
const isWeb = (file: string) => file.startsWith(WEB + "/");
/** The modules a file really imports (TypeScript's own scanner: text in strings is not an import). */
const importsOf = (file: string) => ts.preProcessFile(readFileSync(file, "utf8"), true, true).importedFiles.map((f) => f.fileName);

/** The modules a file imports or re-exports values from: `import type`, `export type` and `{ type X }`-only imports are erased, and left out. */
function valueImportsOf(file: string): string[] {
  const source = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest, false, file.endsWith("x") ? ts.ScriptKind.TSX : ts.ScriptKind.TS);
  const specs: string[] = [];
  const onlyTypes = (elements: readonly (ts.ImportSpecifier | ts.ExportSpecifier)[]) => elements.length > 0 && elements.every((e) => e.isTypeOnly);
  for (const node of source.statements) {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      const clause = node.importClause;
      const bindings = clause?.namedBindings;
      if (clause?.isTypeOnly || (clause && !clause.name && bindings && ts.isNamedImports(bindings) && onlyTypes(bindings.elements))) continue;
      specs.push(node.moduleSpecifier.text);
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      if (node.isTypeOnly || (node.exportClause && ts.isNamedExports(node.exportClause) && onlyTypes(node.exportClause.elements))) continue;
      specs.push(node.moduleSpecifier.text);
    }
  }
  return specs;
}

/** The admin contract's front door: the web application and the CLI may import its types, and nothing else of the relay. */
const CONTRACT = join(REPO_ROOT, "relay", "admin-contract", "index.js");
/** The server-sent-event parser: it imports nothing, so the agent, the CLI and the web application share it. */
const SSE = join(REPO_ROOT, "proto", "sse", "index.js");

describe("repository rules", () => {
  const files = Object.keys(ALLOWED).flatMap((area) => sources(join(REPO_ROOT, area)).map((file) => ({ area, file })));
  // The web application runs in the browser: it has rules of its own below.
  const serverFiles = files.filter(({ file }) => !isWeb(file));

  /**
   * For an area whose rooms (top-level folders and files) stand on floors, bottom first: its files counted,
   * the rooms no floor names, and every import of a room on the same floor or above.
   */
  function floorViolations(area: "agent" | "relay", floors: string[][]) {
    const root = join(REPO_ROOT, area);
    const roomOf = (file: string) => relative(root, file).split("/")[0]!;
    const floorOf = (room: string) => floors.findIndex((f) => f.includes(room));
    const areaFiles = serverFiles.filter((f) => f.area === area).map((f) => f.file);
    const unplaced = [...new Set(areaFiles.map(roomOf))].filter((room) => floorOf(room) < 0);
    const upward = areaFiles.flatMap((file) =>
      importsOf(file)
        .filter((spec) => spec.startsWith("."))
        .map((spec) => resolve(dirname(file), spec).replace(/\.js$/, ".ts"))
        .filter((target) => target.startsWith(root + "/") && roomOf(target) !== roomOf(file) && floorOf(roomOf(target)) >= floorOf(roomOf(file)))
        .map((target) => `${relative(REPO_ROOT, file)} imports ${relative(REPO_ROOT, target)}`),
    );
    return { files: areaFiles.length, unplaced, upward };
  }

  it("keeps dependencies pointing one way: agent and relay never import each other", () => {
    const violations: string[] = [];
    let scanned = 0;
    for (const { area, file } of files) {
      for (const [, spec] of readFileSync(file, "utf8").matchAll(/(?:from|import)\s*\(?\s*["'](\.{1,2}\/[^"']+)["']/g)) {
        scanned++;
        const target = relative(REPO_ROOT, resolve(dirname(file), spec!)).split("/")[0]!;
        if (!ALLOWED[area]!.includes(target)) violations.push(`${relative(REPO_ROOT, file)} imports ${spec}`);
      }
    }
    expect(scanned).toBeGreaterThan(100);
    expect(violations).toEqual([]);
  });

  it("keeps the link's generated wire types at the edge: only the codecs and gRPC transports import them", () => {
    const edge = ["agent/link/agent-link-codec.ts", "agent/link/grpc-dialer.ts", "relay/link/relay-link-codec.ts", "relay/link/grpc-link-server.ts", "proto/wire.ts"];
    const importers = serverFiles
      .filter(({ file }) => importsOf(file).some((spec) => /(^|\/)(wire|generated\/agent_link)\.js$/.test(spec)))
      .map(({ file }) => relative(REPO_ROOT, file))
      .sort();
    expect(importers).toEqual([...edge].sort());
  });

  it("keeps the agent's floors straight: a room imports its own files and rooms on lower floors only", () => {
    // Bottom floor first. version.ts is read by all; config.ts, start-agent.ts and index.ts build the rest.
    const floors = [["version.ts"], ["flow", "hardware"], ["supervisor", "models"], ["runtimes"], ["layers"], ["stacks"], ["link"], ["control"], ["doctor"], ["config.ts"], ["start-agent.ts"], ["index.ts"]];
    const { files: agentFiles, unplaced, upward } = floorViolations("agent", floors);
    expect(agentFiles).toBeGreaterThan(40);
    expect(unplaced).toEqual([]);
    expect(upward).toEqual([]);
  });

  it("lets the CLI into the agent and the relay only through their front doors", () => {
    const doors = ["agent/index.js", "agent/control/index.js", "agent/doctor/index.js", "relay/index.js", "relay/admin-contract/index.js"];
    const cliFiles = serverFiles.filter(({ area }) => area === "cli");
    const pastTheDoor = cliFiles.flatMap(({ file }) =>
      importsOf(file)
        .filter((spec) => spec.startsWith("."))
        .map((spec) => relative(REPO_ROOT, resolve(dirname(file), spec)))
        .filter((target) => /^(agent|relay)\//.test(target) && !doors.includes(target))
        .map((target) => `${relative(REPO_ROOT, file)} imports ${target}`),
    );
    expect(cliFiles.length).toBeGreaterThan(20);
    expect(pastTheDoor).toEqual([]);
  });

  it("keeps the relay's HTTP handlers on the control plane and the gateway's directory: nothing under relay/http reads the store", () => {
    const http = serverFiles.filter(({ file }) => file.startsWith(join(REPO_ROOT, "relay", "http") + "/"));
    expect(http.length).toBeGreaterThan(20);
    const intoStore = http.flatMap(({ file }) =>
      importsOf(file)
        .filter((spec) => spec.startsWith(".") && relative(REPO_ROOT, resolve(dirname(file), spec)).startsWith("relay/store/"))
        .map((spec) => `${relative(REPO_ROOT, file)} imports ${spec}`),
    );
    expect(intoStore).toEqual([]);
  });

  it("has each API decode its own body into the domain: no API's folder imports another's, and only relay/http/chat checks a chat request", () => {
    const apis = ["openai", "anthropic", "rerank"].map((api) => join(REPO_ROOT, "relay", "http", api) + "/");
    const crossing = serverFiles.flatMap(({ file }) => {
      const own = apis.find((dir) => file.startsWith(dir));
      if (!own) return [];
      return importsOf(file)
        .filter((spec) => spec.startsWith("."))
        .map((spec) => resolve(dirname(file), spec))
        .filter((target) => apis.some((dir) => dir !== own && target.startsWith(dir)))
        .map((target) => `${relative(REPO_ROOT, file)} imports ${relative(REPO_ROOT, target)}`);
    });
    expect(crossing).toEqual([]);
    // The schema limits and the domain's check are called through the chat folder's front door, by decoders only.
    const checking = serverFiles.filter(({ file }) => /\bcheckChatRequest\(/.test(readFileSync(file, "utf8"))).map(({ file }) => relative(REPO_ROOT, file));
    expect(checking.sort()).toEqual(["relay/http/anthropic/decode-messages-request.ts", "relay/http/chat/check-chat-request.ts", "relay/http/openai/decode-chat-request.ts", "relay/http/openai/decode-responses-request.ts"]);
  });

  it("keeps every file to 400 lines and every function to 120", () => {
    const code = ["relay", "agent", "proto", "cli"].flatMap((area) => sources(join(REPO_ROOT, area))).filter((f) => !f.includes("/generated/"));
    const longFiles: string[] = [];
    const longFunctions: string[] = [];
    for (const file of code) {
      const text = readFileSync(file, "utf8");
      const rel = relative(REPO_ROOT, file);
      if (text.split("\n").length - 1 > 400) longFiles.push(rel);
      const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, file.endsWith("x") ? ts.ScriptKind.TSX : ts.ScriptKind.TS);
      const visit = (node: ts.Node) => {
        if (ts.isFunctionDeclaration(node) || ts.isMethodDeclaration(node) || ts.isArrowFunction(node) || ts.isFunctionExpression(node) || ts.isConstructorDeclaration(node)) {
          const lines = source.getLineAndCharacterOfPosition(node.getEnd()).line - source.getLineAndCharacterOfPosition(node.getStart()).line + 1;
          const name = "name" in node && node.name && ts.isIdentifier(node.name) ? node.name.text : "(anonymous)";
          if (lines > 120) longFunctions.push(`${rel} ${name}`);
        }
        ts.forEachChild(node, visit);
      };
      visit(source);
    }
    expect(code.length).toBeGreaterThan(200);
    expect(longFiles).toEqual([]);
    expect(longFunctions).toEqual([]);
  });

  it("keeps docs/architecture.md true to the tree: every file it names exists", () => {
    const text = readFileSync(join(REPO_ROOT, "docs", "architecture.md"), "utf8");
    const named = [...new Set([...text.matchAll(/`([^`\s<>]+\.(?:ts|tsx|mjs|cjs|proto))`/g)].map((m) => m[1]!))];
    expect(named.length).toBeGreaterThan(80);
    const tree = ["relay", "agent", "proto", "cli", "scripts", "test"].flatMap((area) => allFiles(join(REPO_ROOT, area))).map((f) => relative(REPO_ROOT, f));
    // A name is a path from the repository's root, or the end of one (`gateway/rename-params.ts`, `fleet.ts`).
    const gone = named.filter((name) => !tree.some((f) => f === name || f.endsWith(`/${name}`)));
    expect(gone).toEqual([]);
  });

  it("keeps each command's policy in the control plane: nothing outside relay/control authorizes a caller or records an audit event", () => {
    const relayFiles = serverFiles.filter(({ area, file }) => area === "relay" && !file.startsWith(join(REPO_ROOT, "relay", "control") + "/")).map(({ file }) => file);
    expect(relayFiles.length).toBeGreaterThan(60);
    const rel = (file: string) => relative(REPO_ROOT, file);
    // Authorizing: the control plane's policy, or what it asks (an organization's scope, the admin role).
    // (A caller's role compared, `user.role === "admin"`, is deciding what it may do too; the store's own
    // invariant, an organization keeps an enabled admin, is checked in its transaction and is not a caller's check.)
    const store = join(REPO_ROOT, "relay", "store") + "/";
    const authorizing = relayFiles
      .filter((file) => {
        const text = readFileSync(file, "utf8");
        return /\b(requireAdmin|requireOperator|orgScope|Policy)\b|\.policy\(/.test(text) || (!file.startsWith(store) && /user\.role\s*[!=]==|role\s*[!=]==\s*"(admin|member)"/.test(text));
      })
      .map(rel);
    expect(authorizing).toEqual([]);
    // Recording: an audit entry's action written anywhere but the control plane (the audit log's own room keeps the records).
    const recording = relayFiles.filter((file) => !file.startsWith(join(REPO_ROOT, "relay", "audit") + "/") && /\baction:\s*"[a-z_.]+"/.test(readFileSync(file, "utf8"))).map(rel);
    expect(recording).toEqual([]);
    // The audit log is built by the composition root and written through the control plane only.
    const auditUsers = relayFiles.filter((file) => importsOf(file).some((spec) => spec.startsWith(".") && relative(REPO_ROOT, resolve(dirname(file), spec)) === "relay/audit/index.js")).map(rel);
    expect(auditUsers).toEqual(["relay/start/start-books.ts"]);
    // The CLI's way in is the front door: no store, no password or secret helpers.
    const exported = readFileSync(join(REPO_ROOT, "relay", "index.ts"), "utf8")
      .split("\n")
      .filter((line) => line.startsWith("export "));
    expect(exported.length).toBeGreaterThan(3);
    expect(exported.filter((line) => /\b(Store|store|RelayInternals|hashPassword|verifyPassword|hashSecret|createApiKey)\b/.test(line))).toEqual([]);
  });

  it("keeps the relay's floors straight: a room imports its own files and rooms on lower floors only", () => {
    // Bottom floor first; the web application (relay/web) is held by its own rule below.
    const floors = [["ids", "health", "admin-contract"], ["store"], ["keys", "events", "limits", "metrics", "usage", "compatibility", "audit", "vault", "outbound", "hub"], ["auth", "link", "ledger", "alerts"], ["routing", "sso"], ["machines"], ["deploy"], ["control", "cluster"], ["http"], ["cluster-config.ts", "relay-config.ts", "config-checks.ts"], ["config.ts", "data-dir-lock.ts"], ["start"], ["index.ts"]];
    const { files: relayFiles, unplaced, upward } = floorViolations("relay", floors);
    expect(relayFiles).toBeGreaterThan(60);
    expect(unplaced).toEqual([]);
    expect(upward).toEqual([]);
  });

  it("writes no console output outside the CLI", () => {
    const offenders = serverFiles.filter(({ area, file }) => area !== "cli" && /\bconsole\.(log|error|warn|info|debug)\(/.test(readFileSync(file, "utf8")));
    expect(offenders.map((f) => relative(REPO_ROOT, f.file))).toEqual([]);
  });

  it("reads process.env only in composition roots and the CLI, never at import time", () => {
    const offenders = serverFiles.filter(({ area, file }) => area !== "cli" && /process\.env/.test(readFileSync(file, "utf8")));
    expect(offenders.map((f) => relative(REPO_ROOT, f.file))).toEqual([]);
  });

  it("keeps the web application to itself: it imports only its own files, preact, and the admin contract's types; the relay never imports it", () => {
    const web = sources(WEB);
    expect(web.length).toBeGreaterThan(20);
    const outside = web.flatMap((file) =>
      importsOf(file)
        .filter((spec) => (spec.startsWith(".") ? !isWeb(resolve(dirname(file), spec)) && ![CONTRACT, SSE].includes(resolve(dirname(file), spec)) : spec !== "preact" && !spec.startsWith("preact/")))
        .map((spec) => `${relative(REPO_ROOT, file)} imports ${spec}`),
    );
    expect(outside).toEqual([]);
    // The contract's types only: its schemas (and zod) stay out of the bundle.
    const contractValues = web.flatMap((file) => valueImportsOf(file).filter((spec) => spec.startsWith(".") && resolve(dirname(file), spec) === CONTRACT).map((spec) => `${relative(REPO_ROOT, file)} imports values of ${spec}`));
    expect(contractValues).toEqual([]);
    const contractUsers = web.filter((file) => importsOf(file).some((spec) => spec.startsWith(".") && resolve(dirname(file), spec) === CONTRACT));
    expect(contractUsers.length).toBeGreaterThan(0);
    const sse = sources(join(REPO_ROOT, "proto", "sse"));
    expect(sse.flatMap((file) => importsOf(file).filter((spec) => !spec.startsWith("./")))).toEqual([]);
    const intoWeb = serverFiles.flatMap(({ file }) => importsOf(file).filter((spec) => spec.startsWith(".") && isWeb(resolve(dirname(file), spec))).map((spec) => `${relative(REPO_ROOT, file)} imports ${spec}`));
    expect(intoWeb).toEqual([]);
  });

  it("keeps the compatibility rules pure: no HTTP, gRPC, database or file system", () => {
    const rules = sources(join(REPO_ROOT, "relay", "compatibility"));
    expect(rules.length).toBeGreaterThan(2);
    const impure = rules.flatMap((file) =>
      importsOf(file)
        .filter((spec) => /^(express|@grpc\/|better-sqlite3|node:)/.test(spec) || /\/(store|http|grpc|control)\//.test(spec + "/") && !/\/store\/index\.js$/.test(spec))
        .map((spec) => `${relative(REPO_ROOT, file)} imports ${spec}`),
    );
    expect(impure).toEqual([]);
  });

  it("keeps the agent package whole without the relay: its code imports only the packages it depends on, and the relay only through loadRelayPart", () => {
    // What scripts/pack-agent.mjs packs: agent/, proto/ and cli/ (whose cli/up/quickstart.ts is `makina up`, a relay).
    const { agentPackage } = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")) as { agentPackage: { dependencies: string[] } };
    const quickstart = join(REPO_ROOT, "cli", "up", "quickstart.ts");
    const packed = serverFiles.filter(({ area, file }) => area !== "relay" && file !== quickstart);
    expect(packed.length).toBeGreaterThan(50);
    const outside: string[] = [];
    const used = new Set<string>();
    for (const { file } of packed) {
      const text = readFileSync(file, "utf8");
      const values = valueImportsOf(file);
      for (const spec of importsOf(file)) {
        if (spec.startsWith(".")) {
          const target = relative(REPO_ROOT, resolve(dirname(file), spec));
          const lazy = text.includes(`loadRelayPart(() => import("${spec}"))`);
          // The admin contract's types are erased: the CLI's admin commands carry nothing of the relay.
          const typesOnly = resolve(dirname(file), spec) === CONTRACT && !values.includes(spec);
          if ((target.startsWith("relay/") || target === "cli/up/quickstart.js") && !lazy && !typesOnly) outside.push(`${relative(REPO_ROOT, file)} imports ${spec}`);
          continue;
        }
        if (spec.startsWith("node:")) continue;
        const name = spec.startsWith("@") ? spec.split("/").slice(0, 2).join("/") : spec.split("/")[0]!;
        // A type-only import is erased: it needs no package at run time.
        if (new RegExp(`import type [^;]*from "${spec.replace(/[/.]/g, "\\$&")}"`).test(text)) continue;
        used.add(name);
        if (!agentPackage.dependencies.includes(name)) outside.push(`${relative(REPO_ROOT, file)} imports ${spec}, which the agent package does not depend on`);
      }
    }
    expect(outside).toEqual([]);
    expect([...used].sort()).toEqual([...agentPackage.dependencies].sort());
  });

  it("keeps sign-in, events and usage recording free of Express: the HTTP layer calls them", () => {
    const areas = ["auth", "events", "usage"].flatMap((a) => sources(join(REPO_ROOT, "relay", a)));
    expect(areas.length).toBeGreaterThan(5);
    expect(areas.flatMap((file) => importsOf(file).filter((spec) => spec === "express").map(() => relative(REPO_ROOT, file)))).toEqual([]);
  });
});
