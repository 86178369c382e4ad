import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { resolveAgentConfig, startAgent, type Agent, type StartAgentOptions } from "../../agent/index.js";
import { silentLogger, createLogger, type Logger } from "../../proto/index.js";
import { resolveRelayConfig } from "../../relay/index.js";
import { startRelay, type RelayInternals as Relay } from "../../relay/start/start-relay.js";
import { testModelPath } from "./models.js";
import { fakeAdapter, type FakeRuntime } from "../fakes/fake-runtime.js";
import { OP } from "./operator.js";

/** A stack's optional layers, as `createStack` takes them. */
export interface StackLayers {
  harness?: string;
  harnessOptions?: Record<string, unknown>;
  orchestrator?: string;
  orchestratorOptions?: Record<string, unknown>;
}

/** A relay and one agent on loopback with a temporary data directory and a real GGUF model deployed. */
export interface TestGateway {
  relay: Relay;
  agent: Agent;
  dataDir: string;
  orgId: string;
  machineId: string;
  machineToken: string;
  stackId: string;
  modelId: string;
  /** An unrestricted key of the organization. */
  apiKey: string;
  /** Base URL for OpenAI clients (`…/v1`). */
  baseURL: string;
  /** Starts another agent for the same machine (after `agent.stop()`). */
  restartAgent(): Promise<Agent>;
  /** Registers another machine in `orgId` and starts a real agent for it (stopped by `close`). */
  addMachine(orgId: string, agentFlags?: Record<string, unknown>): Promise<{ machineId: string; agent: Agent }>;
  /** Creates a stack of the test model on a machine, with the layers given, deployed unless told otherwise. */
  addStack(options: { orgId: string; machineId: string; modelId: string; endpoint?: boolean; deploy?: boolean; layers?: StackLayers }): Promise<string>;
  /** With `runtime: "fake"`: the stand-in model serving `modelId` on a machine. */
  fake(machineId: string, modelId: string): FakeRuntime;
  close(): Promise<void>;
}

function testLog(): Logger {
  return process.env.MAKINA_TEST_LOG ? createLogger({ level: "debug" }) : silentLogger();
}

/** Options of {@link startTestGateway}. */
export interface TestGatewayOptions {
  model?: string;
  relayFlags?: Record<string, unknown>;
  agentFlags?: Record<string, unknown>;
  /** Options of the agents' start beyond the test gateway's own (how images are fetched, for one). */
  agentOptions?: Partial<StartAgentOptions>;
  /** How the first agent reaches the relay: gRPC over loopback (as across machines), or in-process (as `makina up`). @default "grpc" */
  link?: "grpc" | "in-process";
  /**
   * What serves the stacks: the real GGUF model, or the stand-in of test/fakes (no llama.cpp; stacks are of the
   * `openai` kind, whose adapter the agents replace with the stand-in's). @default "gguf"
   */
  runtime?: "gguf" | "fake";
  /** The relay's log. @default silent (every line at debug with MAKINA_TEST_LOG set) */
  log?: Logger;
}

/** Starts a relay on ephemeral ports, registers this machine, deploys a stack and creates a key. */
export async function startTestGateway(options: TestGatewayOptions = {}): Promise<TestGateway> {
  const dataDir = mkdtempSync(join(tmpdir(), "makina-test-"));
  const log = options.log ?? testLog();
  const relay = await startRelay(
    resolveRelayConfig({ flags: { dataDir, port: 0, grpcPort: 0, grpcHost: "127.0.0.1", heartbeatIntervalMs: 500, drainTimeoutMs: 1000, ...options.relayFlags } }),
    { log },
  );
  const org = await relay.control.orgs.create(OP, { name: "Test Org" });
  const { machine, token } = await relay.control.machines.create(OP, { org: org.id, name: "test-machine" });
  const agentFlags = (machineId: string, machineToken: string, extra: Record<string, unknown> = {}) => ({
    server: relay.linkAddress,
    machineId,
    token: machineToken,
    dataDir: join(dataDir, `agent-${machineId}`),
    threads: 1,
    gpu: false,
    maxContextSize: 512,
    reconnectMinMs: 50,
    reconnectMaxMs: 500,
    drainTimeoutMs: 1000,
    // A relay whose link is TLS with its own CA: agents pin it, as the install command makes them.
    ...(relay.linkCaSha256 ? { caSha256: relay.linkCaSha256 } : {}),
    ...extra,
  });
  // The environment as the CLI passes it: runtimes start from it, without its secrets.
  const agentConfig = resolveAgentConfig({ flags: agentFlags(machine.id, token, options.agentFlags), env: process.env });
  const extraAgents: Agent[] = [];
  const dial = options.link === "in-process" ? relay.inProcessDialer({ machineId: machine.id, token }) : undefined;
  const fakes = new Map<string, ReturnType<typeof fakeAdapter>>();
  const adaptersFor = (machineId: string) => {
    if (options.runtime !== "fake") return undefined;
    const adapter = fakeAdapter();
    fakes.set(machineId, adapter);
    return { openai: adapter };
  };
  const stackModel = () =>
    options.runtime === "fake" ? { runtime: "openai" as const, model: "http://fake.invalid/v1#fake" } : { runtime: "gguf" as const, model: options.model ?? testModelPath() };
  let agent = await startAgent(agentConfig, { log, dial, adapters: adaptersFor(machine.id), ...options.agentOptions });
  await agent.link.whenOnline();
  const stack = await relay.control.stacks.create(OP, { org: org.id, name: "test-stack", machine: machine.id, ...stackModel(), modelId: "stories" });
  await relay.control.stacks.deploy(OP, stack.id);
  await relay.deployer.settled(stack.id);
  const deployed = await relay.control.stacks.get(OP, stack.id);
  if (deployed.state !== "deployed") throw new Error(`test stack did not deploy: ${deployed.state} ${deployed.stateError}`);
  const { key } = await relay.control.keys.create(OP, org.id, { name: "test" });
  return {
    relay,
    get agent() {
      return agent;
    },
    dataDir,
    orgId: org.id,
    machineId: machine.id,
    machineToken: token,
    stackId: stack.id,
    modelId: "stories",
    apiKey: key,
    baseURL: `${relay.url}/v1`,
    async restartAgent() {
      agent = await startAgent(agentConfig, { log, dial, adapters: adaptersFor(machine.id), ...options.agentOptions });
      await agent.link.whenOnline();
      return agent;
    },
    async addMachine(orgId, flags) {
      const m = await relay.control.machines.create(OP, { org: orgId, name: `machine-${extraAgents.length + 2}` });
      const a = await startAgent(resolveAgentConfig({ flags: agentFlags(m.machine.id, m.token, flags) }), { log, adapters: adaptersFor(m.machine.id) });
      extraAgents.push(a);
      await a.link.whenOnline();
      return { machineId: m.machine.id, agent: a };
    },
    async addStack(o) {
      const st = await relay.control.stacks.create(OP, { org: o.orgId, name: o.modelId, machine: o.machineId, ...stackModel(), modelId: o.modelId, endpoint: o.endpoint ?? true, ...o.layers });
      if (o.deploy ?? true) {
        await relay.control.stacks.deploy(OP, st.id);
        await relay.deployer.settled(st.id);
      }
      return st.id;
    },
    fake(machineId, modelId) {
      const runtime = fakes.get(machineId)?.runtimes.get(modelId);
      if (!runtime) throw new Error(`no stand-in model serves ${modelId} on ${machineId}`);
      return runtime;
    },
    async close() {
      await Promise.all(extraAgents.map((a) => a.stop()));
      await agent.stop();
      await relay.stop();
      rmSync(dataDir, { recursive: true, force: true });
      // Every part of every process stopped (the leak check after the file finds what a part left open).
      const running = [relay, agent, ...extraAgents].flatMap((p) => p.parts().filter((part) => part.state !== "stopped").map((part) => `${part.name}: ${part.state}`));
      if (running.length > 0) throw new Error(`Parts not stopped: ${running.join(", ")}`);
    },
  };
}
