import { settingOf } from "../config.js";
import type { MachineCarrier } from "../machines/index.js";
import { linkAcceptor, loadLinkTls, shareLinkCertificates, startLinkServer } from "../link/index.js";
import { AdmissionGate } from "../routing/index.js";
import type { Store } from "../store/index.js";
import { SecretsKeyError, type Vault } from "../vault/index.js";
import { secretsKeySetting } from "./start-data.js";
import { joinFleet, PeerListenError, type Fleet } from "../cluster/index.js";
import { peerListenAddress } from "./peer-settings.js";

import type { Shared } from "./relay-parts.js";
import { listenSetting } from "./start-listeners.js";

/** Joins the relays on the same database over NATS, with its direct connections when they are on. */
export async function startFleet(s: Shared, store: Store, secret: string, gate: AdmissionGate, here: MachineCarrier): Promise<Fleet> {
  const { config, log, parts, registry, events } = s;
  // A stack another relay names is read from the database: its machine, and whether the operation fits its state.
  const stackOf = async (id: string) => {
    const stack = await store.stacks.get(id);
    return stack && { machineId: stack.machineId, state: stack.state };
  };
  return parts.start({
    name: "the other relays (NATS)",
    // The listener for the other relays' direct connections says so when it cannot listen; anything else is NATS.
    setting: (err) => (err instanceof PeerListenError ? settingOf("peerAddress") : config.natsCreds ? `${settingOf("nats")}, ${settingOf("natsCreds")}` : settingOf("nats")),
    start: async () => {
      // The secret that seals the relays' messages and direct connections is the database's (made by the first relay).
      const peer = config.peerAddress !== "off" ? { ...peerListenAddress(config), maxMessageChars: 2 * config.bodyLimitBytes + 1024 * 1024 } : undefined;
      return joinFleet({ url: config.nats!, relayId: s.relayId, registry, here, stackOf, gate, events, log: log.child({ component: "fleet" }), queueTimeoutMs: config.queueTimeoutMs, flexQueueTimeoutMs: config.flexQueueTimeoutMs, secret, credsFile: config.natsCreds, peer });
    },
    stop: (f) => f.close(),
  });
}

/** The link's TLS (its CA shared through the database on PostgreSQL) and the gRPC server agents dial. */
export async function startLink(s: Shared, store: Store, vault: Vault, accept: ReturnType<typeof linkAcceptor>) {
  const { config, log, parts, registry, here } = s;
  const loopbackOnly = ["127.0.0.1", "localhost", "::1"].includes(config.grpcHost);
  const tlsOn = config.grpcTls === "on" || (config.grpcTls === "auto" && !loopbackOnly);
  const givenCertificate = config.grpcTlsCert && config.grpcTlsKey ? { certFile: config.grpcTlsCert, keyFile: config.grpcTlsKey } : undefined;
  const tls = await parts.start({
    name: "the link's certificate",
    setting: (err) => (err instanceof SecretsKeyError ? secretsKeySetting : givenCertificate ? `${settingOf("grpcTlsCert")}, ${settingOf("grpcTlsKey")}` : settingOf("dataDir")),
    start: async () => {
      if (!tlsOn) return undefined;
      // Relays on one database present one CA: the fingerprint an install command pins holds for each of them.
      if (!givenCertificate && store.dialect === "postgres") await shareLinkCertificates(vault, config.dataDir, log);
      return loadLinkTls(config.dataDir, givenCertificate);
    },
  });
  if (!tlsOn && !loopbackOnly) log.warn("the agents' link is plaintext on a public address: prompts, answers and machine tokens cross the network unencrypted", { grpcHost: config.grpcHost });
  const link = await parts.start({
    name: `the link listener (${config.grpcHost}:${config.grpcPort})`,
    setting: (err) => listenSetting(err, "grpcPort", "grpcHost"),
    start: () => startLinkServer({ accept, registry, host: config.grpcHost, port: config.grpcPort, tls }),
    stop: (l) => l.stop(),
  });
  const linkHost = config.publicAddress ?? (config.grpcHost === "0.0.0.0" || config.grpcHost === "::" ? "127.0.0.1" : config.grpcHost);
  here.linkAddress = config.publicGrpcAddress ?? `${linkHost.includes(":") ? `[${linkHost}]` : linkHost}:${link.port}`;
  return { link, tls, tlsOn };
}
