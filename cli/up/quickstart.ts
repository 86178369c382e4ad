import { chmodSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { resolveAgentConfig, startAgent, type Agent } from "../../agent/index.js";
import type { Logger } from "../../proto/index.js";
import { BOOTSTRAP, resolveRelayConfig, startRelay, type Relay } from "../../relay/index.js";
import { normalizeModelRef } from "../commands/admin/common.js";
import { DEFAULT_MODEL, DEFAULT_MODEL_ID } from "./default-model.js";


/** What `makina up` prints and writes to `DATA_DIR/quickstart.json`. */
export interface QuickstartInfo {
  base_url: string;
  /** The web application; sign in with `admin`. */
  web_url: string;
  api_key: string;
  model: string;
  organization: string;
  machine_id: string;
  stack_id: string;
  /** The demo stack's state: `deployed`, or `failed` with `stack_error` saying why (the web app offers a retry). */
  stack_state: string;
  stack_error: string | null;
  /** The first admin's login; `password` is empty once the admin changed it. */
  admin: { login: string; password: string; token_file: string };
}

/** Options of {@link startQuickstart}. */
export interface QuickstartOptions {
  dataDir: string;
  host?: string;
  port?: number;
  grpcPort?: number;
  /** Where joining machines fetch the install script (with TLS on the link). */
  installPort?: number;
  /** The name or address other machines reach this one at, as install commands print it (`--public-address`). */
  publicAddress?: string;
  /** Serve HTTPS with this certificate chain and key (PEM files). */
  tlsCert?: string;
  tlsKey?: string;
  model?: string;
  modelId?: string;
  /** Agent inference threads (default: cores − 1). */
  threads?: number;
  /** Runtimes the machine keeps loaded at once (on-demand ones unloaded to keep within it); 0: no limit. */
  maxLoaded?: number;
  /** The memory loaded runtimes may use together (`90%`, `12GiB`): the agent's `--memory-budget`. */
  memoryBudget?: string;
  log: Logger;
  env?: NodeJS.ProcessEnv;
  /** Progress lines for the human (stderr). */
  progress?: (line: string) => void;
}

const writeSecret = (path: string, value: unknown) => {
  writeFileSync(path, JSON.stringify(value, null, 2) + "\n", { mode: 0o600 });
  chmodSync(path, 0o600);
};

const readJson = <T>(path: string): T | undefined => (existsSync(path) ? (JSON.parse(readFileSync(path, "utf8")) as T) : undefined);

/**
 * The all-in-one start: a relay and this machine's agent in one process. The
 * first start creates the `default` organization, an admin login, this machine,
 * a deployed demo stack and an API key; later starts reuse all of them.
 */
export async function startQuickstart(options: QuickstartOptions): Promise<{ relay: Relay; agent: Agent; info: QuickstartInfo; stop(): Promise<void> }> {
  const env = options.env ?? process.env;
  const progress = options.progress ?? (() => {});
  const relay = await startRelay(
    resolveRelayConfig({ flags: { dataDir: options.dataDir, host: options.host, port: options.port, grpcPort: options.grpcPort, installPort: options.installPort, publicAddress: options.publicAddress, tlsCert: options.tlsCert, tlsKey: options.tlsKey }, env }),
    { log: options.log },
  );
  let agent: Agent | undefined;
  try {
    const dataDir = relay.config.dataDir;
    const files = { quickstart: join(dataDir, "quickstart.json"), agent: join(dataDir, "agent.json") };
    const previous = readJson<QuickstartInfo>(files.quickstart);
    const kept = readJson<{ machine_id: string; token: string }>(files.agent);
    // Made the first time, reused after while it still holds: the organization, the admin, this machine, the demo
    // stack (deployed) and the key (the relay's `bootstrap` command, recorded in the audit log as `makina up`).
    const made = await relay.control.bootstrap({
      kept: { adminPassword: previous?.admin.password, machineId: kept?.machine_id, stackId: previous?.stack_id, apiKey: previous?.api_key },
      machineName: hostname() || "this-machine",
      modelRef: normalizeModelRef(options.model ?? env.MAKINA_MODEL ?? DEFAULT_MODEL),
      modelId: options.modelId ?? (options.model || env.MAKINA_MODEL ? undefined : DEFAULT_MODEL_ID),
    });
    const machineCreds = made.machine.token !== null ? { machine_id: made.machine.id, token: made.machine.token } : kept!;
    if (made.machine.token !== null) writeSecret(files.agent, machineCreds);
    const { org, stack } = made;
    if (options.model && made.modelIgnored) progress(`Note: reusing the existing quickstart stack with ${stack.modelRef}; --model applies only to the first start.`);

    agent = await startAgent(
      resolveAgentConfig({
        flags: { server: relay.linkAddress, machineId: machineCreds.machine_id, token: machineCreds.token, dataDir: join(dataDir, "agent"), threads: options.threads, maxLoaded: options.maxLoaded, memoryBudget: options.memoryBudget },
        env,
      }),
      // Relay and agent share this process: the link is a direct call, with no gRPC or socket between them.
      { log: options.log, dial: relay.inProcessDialer({ machineId: machineCreds.machine_id, token: machineCreds.token }) },
    );
    progress(`Deploying ${stack.modelRef} …`);
    await agent.link.whenOnline();
    await relay.deployer.settled(stack.id);
    const deployed = await relay.control.stacks.get(BOOTSTRAP, stack.id);
    // A demo model that cannot be pulled (no internet, a bad reference) does not stop the gateway:
    // the web application shows the failure on the stack's page, with a retry.
    const stackError =
      deployed.state === "deployed"
        ? null
        : `${deployed.stateError ?? deployed.state}` +
          (deployed.modelRef.startsWith("hf:") ? " (without internet access, start with a local GGUF file: makina up --model path/to/model.gguf)" : "");

    const info: QuickstartInfo = {
      base_url: `${relay.url}/v1`,
      web_url: `${relay.adminUrl}/`,
      api_key: made.apiKey,
      model: deployed.modelId,
      organization: org.slug,
      machine_id: machineCreds.machine_id,
      stack_id: stack.id,
      stack_state: deployed.state,
      stack_error: stackError,
      admin: { login: made.admin.login, password: made.admin.password, token_file: join(dataDir, "admin-token") },
    };
    writeSecret(files.quickstart, info);
    const started = agent;
    return {
      relay,
      agent: started,
      info,
      async stop() {
        await started.stop();
        await relay.stop();
      },
    };
  } catch (err) {
    await agent?.stop();
    await relay.stop();
    throw err;
  }
}
