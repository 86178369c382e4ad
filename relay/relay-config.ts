/** The relay's resolved, validated configuration. */
export interface RelayConfig {
  /** Where the SQLite file (without `database`), the admin token and the link's CA live. @default "./.makina" */
  readonly dataDir: string;
  /**
   * A PostgreSQL database (`postgres://user:pass@host:5432/makina`) for the relay's state, shared by every
   * relay given it (docs/scale-out.md); null for SQLite in the data directory. @default null
   */
  readonly database: string | null;
  /**
   * On PostgreSQL: how long the relay serves from memory without hearing from the database's change feed (a
   * PostgreSQL restart shorter than this is not seen by clients), and the longest an admin write waits for a
   * relay that does not confirm it (relay/cluster/change-feed.ts). @default 10000
   */
  readonly changeLeaseMs: number;
  /**
   * A Redis server (`redis://[:pass@]host:6379[/db]`, `rediss://` for TLS) that keeps the keys' rate-limit
   * windows, so limits hold across relays; null for limits in this relay's memory. @default null
   */
  readonly redis: string | null;
  /**
   * With `redis`: what a key with limits gets while Redis cannot be reached. `open`: each relay applies the
   * limits on its own (a key may get its limit on each relay); `closed`: 503 `limits_unavailable`. @default "open"
   */
  readonly redisFail: "open" | "closed";
  /**
   * A NATS server (`nats://[user:pass@]host:4222`, `tls://` for TLS) the relays on one PostgreSQL database
   * reach each other through, so a request for a machine linked to another relay is served through it; null
   * for this relay's own links only. Needs `database`. @default null
   */
  readonly nats: string | null;
  /**
   * With `nats`: a NATS credentials file (a user JWT and its NKey seed, as `nsc` writes it) this relay
   * authenticates to NATS with, instead of or besides credentials in the URL. @default null
   */
  readonly natsCreds: string | null;
  /**
   * With `nats`: join a NATS server beyond loopback that is given neither credentials (in the URL or
   * `natsCreds`) nor TLS (`tls://`). Refused without this: anyone who reaches such a server sees which machines
   * the relays hold and can flood it. The relays' messages are sealed either way. @default false
   */
  readonly natsInsecure: boolean;
  /**
   * A file holding the secrets key: the key the relay's secrets (the relays' shared secret, the link's CA and
   * install keys) are sealed with in the database, which never holds it. By default the data directory's
   * `secrets.key`, made on the first start on a database that names no key (docs/security.md). @default null
   */
  readonly secretsKeyFile: string | null;
  /** The secrets key itself, from the environment only (`MAKINA_SECRETS_KEY`): a flag would show in `ps`. @default null */
  readonly secretsKey: string | null;
  /**
   * With `nats`: where this relay takes the other relays' direct connections (`host:port`, port 0 for any free
   * one), announced to them over NATS, so a request crossing relays takes one TCP hop each way instead of two
   * through NATS; `off` for NATS only. By default the HTTP host (the first non-loopback IPv4 address of this
   * machine when it listens on every address) and any free port. @default null
   */
  readonly peerAddress: string | null;
  /** HTTP listen host. @default "127.0.0.1" */
  readonly host: string;
  /** HTTP port; 0 picks a free one. @default 8080 */
  readonly port: number;
  /** The URL machines reach the gateway at, as install commands print it. @default this relay's URL (its host name when it listens on every address) */
  readonly publicUrl: string | null;
  /** Where the admin API and the web application listen when they have their own listener. @default "127.0.0.1" */
  readonly adminHost: string;
  /**
   * The admin listener's port, or `shared` to serve the admin API and web application on the gateway's own
   * listener. By default they share it while the gateway listens on loopback only, and move to 8082 on
   * loopback when the gateway listens publicly. 0 picks a free port.
   */
  readonly adminPort: number | "shared";
  /**
   * Behind a reverse proxy on this host: take the client's address and scheme from the proxy's
   * `X-Forwarded-For`/`X-Forwarded-Proto` when the request comes from loopback. @default false
   */
  readonly trustProxy: boolean;
  /**
   * A file holding a token (16 characters or more) that reads `/metrics` and nothing else, for a scraper that
   * should not hold the admin token. @default null (the admin token only)
   */
  readonly metricsTokenFile: string | null;
  /** A certificate chain (PEM) and key: the gateway, admin API and web application serve HTTPS. */
  readonly tlsCert: string | null;
  readonly tlsKey: string | null;
  /** gRPC listen host for agents. @default "0.0.0.0" */
  readonly grpcHost: string;
  /** gRPC port for agents; 0 picks a free one. @default 8081 */
  readonly grpcPort: number;
  /**
   * TLS on the agents' link: `on`, `off`, or `auto` (on unless the link listens on loopback only). With no
   * certificate given, the relay makes a private CA and a server certificate on first start. @default "auto"
   */
  readonly grpcTls: "auto" | "on" | "off";
  /** A certificate (chain, PEM) and key for the link instead of the relay's own CA. */
  readonly grpcTlsCert: string | null;
  readonly grpcTlsKey: string | null;
  /**
   * With TLS on the link: the port of the install listener, where joining machines fetch the install script and
   * the agent package and check their token over HTTPS with the link's certificate, whose key the install command
   * pins (on the link's host). @default 8083 (0, any free port, when `grpcPort` is 0)
   */
  readonly installPort: number;
  /** Address agents should dial, as printed in install commands. @default "<publicAddress or host>:<grpcPort>" */
  readonly publicGrpcAddress: string | null;
  /**
   * The host name or address other machines reach this one at: what install commands print for the agents' link
   * and the install listener (and for the relay's URL when it listens on every address), unless `publicGrpcAddress`
   * or `publicUrl` say otherwise. @default null: the link's own host, 127.0.0.1 when it listens on every address
   */
  readonly publicAddress: string | null;
  /**
   * Heartbeat interval asked of agents, ms; a link silent for 3.5 of them is dropped. Every 5 s rather than
   * every second: 10,000 machines cost the relays a fifth of the messages, and a relay or machine busy for a
   * few seconds (thousands relinking at once) does not see live links as silent and drop them, which would
   * only bring them all back. @default 5000
   */
  readonly heartbeatIntervalMs: number;
  /** Largest request body, bytes. @default 4 MiB */
  readonly bodyLimitBytes: number;
  /** Time to first token before 503 `runtime_unavailable`, ms. @default 120000 */
  readonly firstTokenTimeoutMs: number;
  /**
   * How long a request to an on-demand stack may wait for its model to load on the machine, ms, on top of the
   * time to its first token (the agent's own limit on a load is its MAKINA_LOAD_TIMEOUT_MS). @default 300000
   */
  readonly loadTimeoutMs: number;
  /** Time a client has to send a request's headers, ms (slowloris). @default 20000 */
  readonly headerTimeoutMs: number;
  /** Time a client has to send a whole request, body included, ms. @default 60000 */
  readonly bodyTimeoutMs: number;
  /** Most HTTP connections open at once per listener; more are refused. @default 10000 */
  readonly maxConnections: number;
  /** A deployment step the machine reports nothing of (no progress, no result) for this long fails, ms. @default 1800000 */
  readonly deployStepTimeoutMs: number;
  /** On stop, how long requests in flight may take to finish before links and connections are cut, ms. @default 30000 */
  readonly drainTimeoutMs: number;
  /** A request whose runtime produces nothing for this long after its first token ends with `stream_incomplete`, ms. @default 60000 */
  readonly streamIdleTimeoutMs: number;
  /** Longest non-streamed request, ms. @default 600000 */
  readonly requestTimeoutMs: number;
  /** How often the web application's live event stream sends a keepalive and checks its session again, ms. @default 15000 */
  readonly eventsKeepaliveMs: number;
  /** How long the audit log keeps an event, days. @default 365 */
  readonly auditRetentionDays: number;
  /** How long the request log keeps a request, days. @default 30 */
  readonly requestLogDays: number;
  /** The most requests the request log keeps per organization (the newest). @default 100000 */
  readonly requestLogRows: number;
  /** Requests one stack runs at once; more wait in its queue. @default 64 */
  readonly maxInFlightPerStack: number;
  /** Requests one machine runs at once, all its stacks together. @default 256 */
  readonly maxInFlightPerMachine: number;
  /** Requests that may wait for a stack; more get 503 at once. @default 256 */
  readonly maxQueuePerStack: number;
  /** Longest wait in a stack's queue before 503, ms (`priority` and `default` requests). @default 30000 */
  readonly queueTimeoutMs: number;
  /** Longest wait in a stack's queue of a `flex` request, ms. @default 600000 */
  readonly flexQueueTimeoutMs: number;
  /** A request waiting in a queue is ranked one service tier higher per this many ms waited (no tier starves). @default 30000 */
  readonly queueAgingMs: number;
  /** Alert webhooks may be plain http and private addresses (on-premises receivers, tests). @default false */
  readonly alertsAllowPrivate: boolean;
  /** The first wait before a failed alert delivery is tried again, ms; the later ones are multiples of it. @default 5000 */
  readonly alertsFirstRetryMs: number;
  /** How often the relay looks for alert events (machines offline, budgets, error rates, expiring keys), ms. @default 15000 */
  readonly alertsCheckMs: number;
  /** Identity providers may be plain http and private addresses (a Keycloak on the company's network, tests). @default false */
  readonly ssoAllowPrivate: boolean;
  /** How long a session opened through an identity provider lasts, hours (then its person signs in there again). @default 12 */
  readonly ssoSessionHours: number;
  /** The most stacks one organization may have (a tenant cannot grow the relays' memory and work without end). @default 10000 */
  readonly maxStacksPerOrg: number;
  /** The most keys (not revoked) one person may have made; the operator's admin token is not counted. @default 1000 */
  readonly maxKeysPerPerson: number;
  /** Completion tokens assumed when admitting a request without `max_tokens` against a token limit. @default 512 */
  readonly defaultCompletionEstimate: number;
  readonly logLevel: "debug" | "info" | "warn" | "error";
  /** Log lines as JSON, or readable (`text`); `auto`: readable in a terminal, JSON otherwise. @default "auto" */
  readonly logFormat: "auto" | "json" | "text";
  /** Where the Forge reads GGUF headers of `hf:` references (a mirror, like the agents'). @default "https://huggingface.co" */
  readonly hfEndpoint: string;
  /**
   * A hub token for gated and private repositories (`HF_TOKEN`, from the environment only), sent to `hfEndpoint` only
   * (the Forge's search, its header reads), never logged or shown. @default null
   */
  readonly hfToken: string | null;
  /** A file holding that token (`MAKINA_HF_TOKEN_FILE`), read at start; `HF_TOKEN` wins. @default null */
  readonly hfTokenFile: string | null;
}
