import type { CommandModule } from "yargs";
import { runUntilSignal } from "../run-until-signal.js";

interface RelayArgs {
  dataDir?: string;
  host?: string;
  port?: number;
  grpcPort?: number;
}

export const relayCommand: CommandModule<object, RelayArgs> = {
  command: "relay",
  describe: "Run the relay (gateway + control plane) alone",
  builder: (y) =>
    y
      .option("data-dir", { type: "string", describe: "Data directory (SQLite, admin token) [default: ./.makina]" })
      .option("host", { type: "string", describe: "HTTP listen host [default: 127.0.0.1]" })
      .option("port", { type: "number", describe: "HTTP port [default: 8080]" })
      .option("grpc-port", { type: "number", describe: "Port agents dial [default: 8081]" }),
  handler: async (argv) => {
    const { resolveRelayConfig, startRelay } = await import("../../relay/index.js");
    const config = resolveRelayConfig({ flags: { dataDir: argv.dataDir, host: argv.host, port: argv.port, grpcPort: argv.grpcPort }, env: process.env });
    const relay = await startRelay(config);
    process.stdout.write(`Makina relay\n  gateway:     ${relay.url}/v1\n  agents dial: ${relay.linkAddress}\n  admin token: ${config.dataDir}/admin-token\n`);
    await runUntilSignal(() => relay.stop());
  },
};
