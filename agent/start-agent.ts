import type { Llama } from "node-llama-cpp";
import { createLogger, MakinaError, PROTOCOL_VERSION, toLinkError, type CommandProgress, type HardwareReport, type Logger } from "../proto/index.js";
import type { AgentConfig } from "./config.js";
import { detectHardware } from "./hardware/detect-hardware.js";
import { Backoff } from "./link/backoff.js";
import { InferenceDispatcher } from "./link/inference-dispatcher.js";
import { LinkClient } from "./link/link-client.js";
import { ModelStore } from "./models/model-store.js";
import { createLlama } from "./runtimes/gguf/gguf-engine.js";
import { StackHost } from "./stacks/stack-host.js";
import { agentVersion } from "./version.js";

/** A running agent. */
export interface Agent {
  readonly config: AgentConfig;
  readonly link: LinkClient;
  readonly host: StackHost;
  readonly inference: InferenceDispatcher;
  readonly hardware: HardwareReport;
  /** Closes the link, aborts requests, unloads models. Idempotent. */
  stop(): Promise<void>;
}

/** Composition root of the agent: hardware, model store, runtimes, link. */
export async function startAgent(config: AgentConfig, options: { log?: Logger } = {}): Promise<Agent> {
  const log = (options.log ?? createLogger({ level: config.logLevel })).child({ component: "agent", machineId: config.machineId });
  const { report: hardware } = await detectHardware({ log });
  let llama: Promise<Llama> | undefined;
  const host = new StackHost({
    config,
    models: new ModelStore(config.dataDir, log.child({ component: "models" })),
    llama: () => (llama ??= createLlama({ threads: config.threads, gpu: config.gpu, log: log.child({ component: "llama" }) })),
    log: log.child({ component: "stacks" }),
  });
  const commands = new Map<string, AbortController>();
  // `link` is defined below; these closures only run once it exists.
  const inference = new InferenceDispatcher(host, (m) => link.send(m), log.child({ component: "inference" }));
  const link: LinkClient = new LinkClient({
    server: config.server,
    machineId: config.machineId,
    token: config.token,
    hello: () => ({ protocolVersion: PROTOCOL_VERSION, agentVersion: agentVersion(), hardware }),
    inFlight: () => inference.inFlight,
    backoff: new Backoff({ minMs: config.reconnectMinMs, maxMs: config.reconnectMaxMs }),
    log: log.child({ component: "link" }),
    onDisconnect: () => {
      inference.abortAll("the link to the relay was lost");
      for (const c of commands.values()) c.abort(new MakinaError("canceled", "the link to the relay was lost"));
    },
    onMessage: (message) => {
      const body = message.body;
      switch (body?.$case) {
        case "inferenceRequest":
          inference.start(body.value);
          return;
        case "inferenceCancel":
          inference.cancel(body.value.requestId, body.value.reason);
          return;
        case "inferenceCredit":
          inference.credit(body.value.requestId, body.value.credits);
          return;
        case "command": {
          const command = body.value;
          const controller = new AbortController();
          commands.set(command.commandId, controller);
          const progress = (p: Omit<CommandProgress, "commandId">) =>
            link.send({ body: { $case: "commandProgress", value: { commandId: command.commandId, ...p } } });
          host
            .run(command, progress, controller.signal)
            .then(
              (result) => link.send({ body: { $case: "commandResult", value: { ...result, commandId: command.commandId } } }),
              (err: unknown) => {
                const e = MakinaError.from(err);
                log.warn("command failed", { stackId: command.stackId, step: command.step?.$case, err: e, cause: e.cause });
                link.send({ body: { $case: "commandResult", value: { commandId: command.commandId, error: toLinkError(e), modelPath: "", modelSha256: "", modelSizeBytes: 0, contextSize: 0 } } });
              },
            )
            .finally(() => commands.delete(command.commandId));
          return;
        }
        default:
          return;
      }
    },
  });
  link.start();

  let stopping: Promise<void> | undefined;
  return {
    config,
    link,
    host,
    inference,
    hardware,
    stop() {
      stopping ??= (async () => {
        await link.stop();
        inference.abortAll("the agent is stopping");
        await host.close();
        const l = await llama?.catch(() => undefined);
        await l?.dispose();
        log.info("agent stopped");
      })();
      return stopping;
    },
  };
}
