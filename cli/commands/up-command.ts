import type { CommandModule } from "yargs";
import { createLogger } from "../../proto/index.js";
import { CliError, EXIT } from "../cli-error.js";
import { loadRelayPart } from "../relay-part.js";
import { runUntilSignal } from "../run-until-signal.js";
import { DEFAULT_MODEL } from "../up/default-model.js";
import type { QuickstartOptions } from "../up/quickstart.js";

/** The flags: the quickstart's own options, plus --json. */
type UpArgs = Pick<QuickstartOptions, "dataDir" | "host" | "port" | "grpcPort" | "installPort" | "publicAddress" | "tlsCert" | "tlsKey" | "model" | "modelId" | "threads" | "maxLoaded" | "memoryBudget"> & { json: boolean; logFormat?: "auto" | "text" | "json" };

export const upCommand: CommandModule = {
  command: "up",
  describe: "Start a relay and this machine's agent, with a deployed demo stack and an API key",
  builder: (y) =>
    y
      .option("data-dir", { type: "string", default: ".makina", describe: "Data directory" })
      .option("host", { type: "string", describe: "HTTP listen host [default: 127.0.0.1]" })
      .option("port", { type: "number", describe: "HTTP port [default: 8080]" })
      .option("grpc-port", { type: "number", describe: "Port agents dial [default: 8081]" })
      .option("public-address", { type: "string", describe: "The name or address other machines reach this one at: what the install commands of Add machine print (env MAKINA_PUBLIC_ADDRESS) [default: none: they work on this computer only]" })
      .option("install-port", { type: "number", describe: "Port where joining machines fetch the install script, over the link's TLS (env MAKINA_INSTALL_PORT) [default: 8083]" })
      .option("tls-cert", { type: "string", describe: "Certificate chain (PEM): serve the gateway and web application over HTTPS" })
      .option("tls-key", { type: "string", describe: "Its private key (PEM)" })
      .option("model", { type: "string", describe: `GGUF path, https:// URL or hf: reference [default: ${DEFAULT_MODEL}]` })
      .option("model-id", { type: "string", describe: "The id clients pass as `model`" })
      .option("threads", { type: "number", describe: "Inference threads [default: cores - 1]" })
      .option("max-loaded", { type: "number", describe: "Runtimes loaded at once on this machine; on-demand stacks are unloaded (least recently used first) to keep within it; 0: no limit [default: 0]" })
      .option("memory-budget", { type: "string", describe: "Memory the loaded runtimes may use together: a share of the GPUs' memory (else of RAM), or a size (12GiB); on-demand stacks are unloaded to keep within it [default: 90%]" })
      .option("json", { type: "boolean", default: false, describe: "Print the quickstart details as one JSON document" })
      .option("log-format", { type: "string", choices: ["auto", "text", "json"], describe: "Log lines: readable (text) or JSON; auto: readable in a terminal, JSON otherwise (env MAKINA_LOG_FORMAT) [default: auto]" }),
  handler: async (raw) => {
    const argv = raw as unknown as UpArgs;
    const format = argv.logFormat ?? process.env.MAKINA_LOG_FORMAT ?? "auto";
    if (format !== "auto" && format !== "text" && format !== "json") throw new CliError(`MAKINA_LOG_FORMAT must be auto, text or json, got '${format}'.`, EXIT.usage);
    const log = createLogger({ level: (process.env.MAKINA_LOG_LEVEL as "info" | undefined) ?? "warn", format });
    // Loaded here, not at the top: relay and llama.cpp bindings are heavy, and other commands never need them.
    const { startQuickstart } = await loadRelayPart(() => import("../up/quickstart.js"));
    const qs = await startQuickstart({
      dataDir: argv.dataDir,
      host: argv.host,
      port: argv.port,
      grpcPort: argv.grpcPort,
      installPort: argv.installPort,
      publicAddress: argv.publicAddress,
      tlsCert: argv.tlsCert,
      tlsKey: argv.tlsKey,
      model: argv.model,
      modelId: argv.modelId,
      threads: argv.threads,
      maxLoaded: argv.maxLoaded,
      memoryBudget: argv.memoryBudget,
      log,
      progress: (line) => process.stderr.write(line + "\n"),
    });
    const i = qs.info;
    if (argv.json) process.stdout.write(JSON.stringify(i, null, 2) + "\n");
    else
      process.stdout.write(
        [
          "Makina is up.",
          `  web:       ${i.web_url}  (sign in as ${i.admin.login}, ${i.admin.password ? `password ${i.admin.password}` : "with the password you set"})`,
          `  base URL:  ${i.base_url}`,
          `  API key:   ${i.api_key}`,
          `  model:     ${i.model}${i.stack_error ? `  (NOT deployed: ${i.stack_error}; retry or pick another model on the stack's page)` : ""}`,
          `  admin:     token in ${i.admin.token_file}`,
          `  saved in:  ${qs.relay.config.dataDir}/quickstart.json`,
          "",
          "Try it:",
          `  curl ${i.base_url}/chat/completions -H "Authorization: Bearer ${i.api_key}" -H "Content-Type: application/json" \\`,
          `    -d '{"model": "${i.model}", "messages": [{"role": "user", "content": "Hello!"}]}'`,
          "",
          "Ctrl-C stops it; the next `makina up` reuses everything.",
          "",
        ].join("\n"),
      );
    await runUntilSignal(() => qs.stop());
  },
};
