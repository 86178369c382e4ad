import type { CommandModule } from "yargs";
import { loadRelayPart } from "../relay-part.js";
import { runUntilSignal } from "../run-until-signal.js";

interface RelayArgs {
  dataDir?: string;
  database?: string;
  redis?: string;
  redisFail?: string;
  nats?: string;
  natsCreds?: string;
  natsInsecure?: boolean;
  secretsKeyFile?: string;
  peerAddress?: string;
  host?: string;
  port?: number;
  grpcPort?: number;
  installPort?: number;
  grpcHost?: string;
  tlsCert?: string;
  tlsKey?: string;
  trustProxy?: boolean;
  adminHost?: string;
  adminPort?: string;
  grpcTls?: string;
  grpcTlsCert?: string;
  grpcTlsKey?: string;
  publicGrpcAddress?: string;
  publicUrl?: string;
  publicAddress?: string;
  logFormat?: string;
}

export const relayCommand: CommandModule<object, RelayArgs> = {
  command: "relay",
  describe: "Run the relay (gateway + control plane) alone",
  builder: (y) =>
    y
      .option("data-dir", { type: "string", describe: "Data directory (SQLite, admin token) [default: ./.makina]" })
      .option("database", { type: "string", describe: "PostgreSQL URL for the relay's state (env MAKINA_DATABASE_URL) [default: SQLite in the data directory]" })
      .option("nats", { type: "string", describe: "NATS URL joining the relays on one PostgreSQL database: any relay serves any machine's stacks (env MAKINA_NATS_URL)" })
      .option("nats-creds", { type: "string", describe: "With --nats: a NATS credentials file (user JWT and NKey seed) to authenticate with (env MAKINA_NATS_CREDS)" })
      .option("nats-insecure", { type: "boolean", describe: "With --nats: join a NATS server beyond loopback that has neither credentials nor TLS (refused without it; env MAKINA_NATS_INSECURE)" })
      .option("secrets-key-file", { type: "string", describe: "The key the relay's secrets are sealed with in the database (the key itself may come in MAKINA_SECRETS_KEY; env MAKINA_SECRETS_KEY_FILE) [default: the data directory's secrets.key, made on first start]" })
      .option("peer-address", { type: "string", describe: "With --nats: HOST:PORT where the other relays connect directly to this one for requests crossing relays, or 'off' for NATS only (env MAKINA_PEER_ADDRESS) [default: the HTTP host, any free port]" })
      .option("redis", { type: "string", describe: "Redis URL for the keys' rate limits, shared by every relay given it (env MAKINA_REDIS_URL) [default: in the relay's memory]" })
      .option("redis-fail", { type: "string", choices: ["open", "closed"], describe: "With --redis: while Redis cannot be reached, each relay applies the keys' limits on its own (open), or keys with limits get 503 limits_unavailable (closed) (env MAKINA_REDIS_FAIL) [default: open]" })
      .option("host", { type: "string", describe: "HTTP listen host [default: 127.0.0.1]" })
      .option("port", { type: "number", describe: "HTTP port [default: 8080]" })
      .option("tls-cert", { type: "string", describe: "Certificate chain (PEM): serve the gateway, admin API and web application over HTTPS" })
      .option("tls-key", { type: "string", describe: "Its private key (PEM)" })
      .option("admin-host", { type: "string", describe: "Where the admin API and web application listen when they have their own listener [default: 127.0.0.1]" })
      .option("admin-port", { type: "string", describe: "Their own port, or 'shared' for the gateway's listener [default: shared while --host is loopback, else 8082]" })
      .option("trust-proxy", { type: "boolean", describe: "Behind a reverse proxy on this host: take the client's address and scheme from X-Forwarded-* sent from loopback" })
      .option("grpc-port", { type: "number", describe: "Port agents dial [default: 8081]" })
      .option("install-port", { type: "number", describe: "With TLS on the link: the HTTPS port joining machines fetch the install script and agent package from, its key pinned in install commands (env MAKINA_INSTALL_PORT) [default: 8083; any free port with --grpc-port 0]" })
      .option("grpc-host", { type: "string", describe: "Host the agents' link listens on [default: 0.0.0.0]" })
      .option("grpc-tls", { type: "string", choices: ["auto", "on", "off"], describe: "TLS on the agents' link; auto: on unless it listens on loopback only [default: auto]" })
      .option("grpc-tls-cert", { type: "string", describe: "Certificate chain (PEM) for the link, instead of the relay's own CA" })
      .option("grpc-tls-key", { type: "string", describe: "Its private key (PEM)" })
      .option("public-url", { type: "string", describe: "The URL machines reach this relay at, as install commands print it [default: this relay's URL]" })
      .option("public-grpc-address", { type: "string", describe: "host:port agents dial, as install commands print it [default: the public address's, else this host's link address]" })
      .option("public-address", { type: "string", describe: "The name or address other machines reach this one at, as install commands print it for the link and the install script (env MAKINA_PUBLIC_ADDRESS) [default: 127.0.0.1 when the link listens on every address: install commands then work on this computer only]" })
      .option("log-format", { type: "string", choices: ["auto", "text", "json"], describe: "Log lines: readable (text) or JSON; auto: readable in a terminal, JSON otherwise (env MAKINA_LOG_FORMAT) [default: auto]" }),
  handler: async (argv) => {
    const { resolveRelayConfig, startRelay } = await loadRelayPart(() => import("../../relay/index.js"));
    const config = resolveRelayConfig({
      flags: {
        dataDir: argv.dataDir,
        database: argv.database,
        redis: argv.redis,
        redisFail: argv.redisFail,
        nats: argv.nats,
        natsCreds: argv.natsCreds,
        natsInsecure: argv.natsInsecure,
        secretsKeyFile: argv.secretsKeyFile,
        peerAddress: argv.peerAddress,
        host: argv.host,
        port: argv.port,
        tlsCert: argv.tlsCert,
        tlsKey: argv.tlsKey,
        trustProxy: argv.trustProxy,
        adminHost: argv.adminHost,
        adminPort: argv.adminPort,
        grpcPort: argv.grpcPort,
        installPort: argv.installPort,
        grpcHost: argv.grpcHost,
        grpcTls: argv.grpcTls,
        grpcTlsCert: argv.grpcTlsCert,
        grpcTlsKey: argv.grpcTlsKey,
        publicGrpcAddress: argv.publicGrpcAddress,
        publicUrl: argv.publicUrl,
        publicAddress: argv.publicAddress,
        logFormat: argv.logFormat,
      },
      env: process.env,
    });
    const relay = await startRelay(config);
    const trust = relay.linkCaSha256 ? `TLS, own CA sha256 ${relay.linkCaSha256}` : relay.linkTls ? "TLS" : "plaintext";
    const token = relay.adminToken ? `${config.dataDir}/admin-token` : "the deployment's, made by the first relay on this database (its data directory's admin-token)";
    process.stdout.write(
      `Makina relay\n  gateway:     ${relay.url}/v1\n  admin & web: ${relay.adminUrl}/\n  agents dial: ${relay.linkAddress} (${trust})\n  admin token: ${token}\n`,
    );
    await runUntilSignal(() => relay.stop());
  },
};
