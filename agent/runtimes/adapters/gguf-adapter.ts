import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { ggufFacts, MakinaError } from "../../../proto/index.js";
import { dependencyVersion } from "../../version.js";
import type { RuntimeAdapter } from "../runtime-adapter.js";
import { ProcessSupervisor } from "../../supervisor/index.js";
import { GgufProcessRuntime } from "../gguf/gguf-process-runtime.js";
import { GGUF_FRAME_MS } from "../gguf/gguf-wire.js";
import { processHealth } from "../gguf/process-health.js";
import { runtimeEnv } from "../runtime-env.js";
import { superviseUntilReady } from "./server-runtime.js";

/** The compiled GGUF server next to this module, or in dist/ when running from TypeScript sources (tests run `npm run build` first). */
function ggufServerEntry(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  const beside = join(here, "..", "gguf", "gguf-server.js");
  if (existsSync(beside)) return beside;
  for (let dir = here; dir !== dirname(dir); dir = dirname(dir)) {
    const built = join(dir, "dist", "agent", "runtimes", "gguf", "gguf-server.js");
    if (existsSync(built)) return built;
  }
  throw new MakinaError("runtime_unavailable", "The GGUF server is not built: run `npm run build`.");
}

/** Options of {@link ggufAdapter}. */
export interface GgufAdapterOptions {
  /** Context per sequence, tokens, of a stack that asks for none. */
  maxContextSize: number;
  /** Requests one model serves at once. */
  sequences: number;
  /** The machine's inference thread budget, shared by every GGUF model's process. */
  threads: number;
  gpu: "auto" | false;
  /** After a streamed answer's first token, its text leaves the model process at most once per this many ms (0: each token). @default GGUF_FRAME_MS */
  streamIntervalMs?: number;
}

/**
 * GGUF through node-llama-cpp (prebuilt llama.cpp binaries from npm), each
 * model in its own supervised process reached over a local socket with
 * per-request credit, so that a crash of the model never takes the agent down
 * and a slow client pauses its request's decoding.
 */
export function ggufAdapter(options: GgufAdapterOptions): RuntimeAdapter {
  // Threads in use by running GGUF processes: together they stay within the budget, so llama.cpp's
  // spinning threads never outnumber the cores (the first model gets the whole budget, later ones what is left).
  let threadsInUse = 0;
  /** The threads each running process holds now, by its runtime (a handover's new process takes as many as the one it replaces). */
  const heldBy = new WeakMap<object, () => number>();
  return {
    kind: "gguf",
    requirements: { description: "any machine" },
    async install() {
      ggufServerEntry();
      return { version: `node-llama-cpp ${dependencyVersion("node-llama-cpp")}` };
    },
    async start(model, ctx) {
      if (!model.path) throw new MakinaError("invalid_value", `The GGUF runtime needs a model file, got '${model.ref}'.`);
      const path = model.path;
      const replaced = model.replaces ? heldBy.get(model.replaces)?.() : undefined;
      const threads = Math.max(1, replaced ?? options.threads - threadsInUse);
      if (replaced === undefined && threadsInUse + threads > options.threads) {
        ctx.log.warn("the inference thread budget is used up: this model gets 1 thread, and the CPU is oversubscribed while models decode at once", {
          budget: options.threads,
          inUse: threadsInUse,
        });
      }
      threadsInUse += threads;
      const socketDir = privateSocketDir(ctx.runDir);
      const socketPath = join(socketDir.path, `gguf-${randomBytes(6).toString("hex")}.sock`);
      // The threads this process holds now: given back while its model sleeps, taken again when it wakes.
      let held = threads;
      /** Whether the model sleeps now (an on-demand stack's, unloaded in its process). */
      let asleep = false;
      /** The runtime, once its process first answered. */
      let runtime: GgufProcessRuntime | undefined;
      const supervisor = new ProcessSupervisor({
        name: `gguf ${model.modelId}`,
        command: process.execPath,
        // Restarted after a crash while its model sleeps, the process starts asleep: nothing loaded that the budget does not count.
        args: () => [
          ggufServerEntry(),
          "--model",
          path,
          "--socket",
          socketPath,
          "--threads",
          String(Math.max(1, held)),
          "--context",
          // The stack's own, or the machine's default; the model process caps it at what the model was trained for.
          String(model.maxContext ?? options.maxContextSize),
          "--sequences",
          String(options.sequences),
          "--thread-budget",
          String(options.threads),
          "--frame-ms",
          String(options.streamIntervalMs ?? GGUF_FRAME_MS),
          ...(options.gpu === false ? ["--cpu"] : []),
          ...(asleep ? ["--asleep"] : []),
        ],
        // The model process gets the agent's environment without its secrets.
        env: runtimeEnv(ctx.env),
        // Every probe also says what the loaded model holds now (its count follows a restart, a sleep, a wake).
        ready: async (signal) => {
          const health = await processHealth(socketPath, signal);
          runtime?.noteMemory(health.memoryBytes);
          return true;
        },
        ...ctx.health,
        log: ctx.log,
        onOutput: ctx.output,
      });
      const release = () => {
        threadsInUse -= held;
        held = 0;
        rmSync(socketDir.temporary ? socketDir.path : socketPath, { recursive: true, force: true });
      };
      const sleeping = {
        release: () => {
          threadsInUse -= held;
          held = 0;
          asleep = true;
        },
        take: () => {
          held = Math.max(1, options.threads - threadsInUse);
          threadsInUse += held;
          asleep = false;
          return held;
        },
      };
      try {
        await superviseUntilReady(supervisor, ctx);
        const { contextSize, memoryBytes } = await processHealth(socketPath, ctx.signal);
        // What the model is for, from its header (the model process refuses chats of an embedding model itself).
        const { readGgufFileInfo } = await import("node-llama-cpp");
        const embeddingModel = await readGgufFileInfo(path, { sourceType: "filesystem", logWarnings: false }).then(async (info) => (await ggufFacts(info)).embeddingModel, () => false);
        runtime = new GgufProcessRuntime({ socketPath, contextSize, supervisor, onClose: release, embeddingModel, threads: sleeping, memoryBytes });
        heldBy.set(runtime, () => held);
        return runtime;
      } catch (err) {
        await supervisor.stop();
        release();
        throw err;
      }
    },
  };
}

/** The longest socket path every platform takes (macOS: 104 bytes with its terminator), with room for the file's name. */
const MAX_SOCKET_DIR = 70;

/**
 * A directory only the agent's user can enter (0700), for the model processes' sockets: the agent's run
 * directory, or, when its path is too long for a socket, a private temporary one.
 */
function privateSocketDir(runDir: string | undefined): { path: string; temporary: boolean } {
  if (runDir && Buffer.byteLength(runDir) <= MAX_SOCKET_DIR) {
    mkdirSync(runDir, { recursive: true, mode: 0o700 });
    chmodSync(runDir, 0o700);
    return { path: runDir, temporary: false };
  }
  return { path: mkdtempSync(join(tmpdir(), "makina-run-")), temporary: true };
}
