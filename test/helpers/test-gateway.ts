import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { resolveAgentConfig, startAgent, type Agent } from "../../agent/index.js";
import { silentLogger, createLogger, type Logger } from "../../proto/index.js";
import { resolveRelayConfig, startRelay, type Relay } from "../../relay/index.js";
import { testModelPath } from "./models.js";

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
  close(): Promise<void>;
}

function testLog(): Logger {
  return process.env.MAKINA_TEST_LOG ? createLogger({ level: "debug" }) : silentLogger();
}

/** Starts a relay on ephemeral ports, registers this machine, deploys a stack and creates a key. */
export async function startTestGateway(options: { model?: string; relayFlags?: Record<string, unknown> } = {}): Promise<TestGateway> {
  const dataDir = mkdtempSync(join(tmpdir(), "makina-test-"));
  const log = testLog();
  const relay = await startRelay(
    resolveRelayConfig({ flags: { dataDir, port: 0, grpcPort: 0, grpcHost: "127.0.0.1", heartbeatIntervalMs: 500, ...options.relayFlags } }),
    { log },
  );
  const org = relay.control.createOrg("Test Org");
  const { machine, token } = relay.control.createMachine(org.id, "test-machine");
  const agentConfig = resolveAgentConfig({
    flags: { server: relay.linkAddress, machineId: machine.id, token, dataDir: join(dataDir, "agent"), threads: 1, gpu: false, maxContextSize: 512, reconnectMinMs: 50, reconnectMaxMs: 500 },
  });
  let agent = await startAgent(agentConfig, { log });
  await agent.link.whenOnline();
  const stack = relay.control.createStack({ org: org.id, name: "test-stack", machine: machine.id, runtime: "gguf", model: options.model ?? testModelPath(), modelId: "stories" });
  relay.control.deploy(stack.id);
  await relay.deployer.settled(stack.id);
  const deployed = relay.control.stack(stack.id);
  if (deployed.state !== "deployed") throw new Error(`test stack did not deploy: ${deployed.state} ${deployed.stateError}`);
  const { key } = relay.control.createKey(org.id, { name: "test" });
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
      agent = await startAgent(agentConfig, { log });
      await agent.link.whenOnline();
      return agent;
    },
    async close() {
      await agent.stop();
      await relay.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
