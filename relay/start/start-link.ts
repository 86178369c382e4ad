import { MakinaError, type DeployStep } from "../../proto/index.js";
import { settingOf } from "../config.js";
import { ModelFiles } from "../control/index.js";
import { AgentRegistry, linkAcceptor, loadLinkTls, shareLinkCertificates, startLinkServer } from "../link/index.js";
import { AdmissionGate } from "../routing/index.js";
import type { Store } from "../store/index.js";
import { joinFleet, PeerListenError, type Fleet } from "../cluster/index.js";
import { peerListenAddress, peerSecret } from "./peer-settings.js";

import type { Shared } from "./relay-parts.js";
import { listenSetting } from "./start-listeners.js";

/** Joins the relays on the same database over NATS, with its direct connections when they are on. */
export async function startFleet(s: Shared, store: Store, gate: AdmissionGate): Promise<Fleet> {
  const { config, log, parts, registry, loads, events } = s;
  return parts.start({
    name: "the other relays (NATS)",
    // The listener for the other relays' direct connections says so when it cannot listen; anything else is NATS.
    setting: (err) => settingOf(err instanceof PeerListenError ? "peerAddress" : "nats"),
    start: async () => {
      // The secret of the relays' direct connections is the database's (made by the first relay).
      const peer = config.peerAddress !== "off" ? { ...peerListenAddress(config), secret: await peerSecret(store), maxMessageChars: 2 * config.bodyLimitBytes + 1024 * 1024 } : undefined;
      return joinFleet({ url: config.nats!, relayId: s.relayId, registry, loads, gate, events, log: log.child({ component: "fleet" }), queueTimeoutMs: config.queueTimeoutMs, peer });
    },
    stop: (f) => f.close(),
  });
}

/** The link's TLS (its CA shared through the database on PostgreSQL) and the gRPC server agents dial. */
export async function startLink(s: Shared, store: Store, accept: ReturnType<typeof linkAcceptor>) {
  const { config, log, parts, registry, here } = s;
  const loopbackOnly = ["127.0.0.1", "localhost", "::1"].includes(config.grpcHost);
  const tlsOn = config.grpcTls === "on" || (config.grpcTls === "auto" && !loopbackOnly);
  const givenCertificate = config.grpcTlsCert && config.grpcTlsKey ? { certFile: config.grpcTlsCert, keyFile: config.grpcTlsKey } : undefined;
  const tls = await parts.start({
    name: "the link's certificate",
    setting: givenCertificate ? `${settingOf("grpcTlsCert")}, ${settingOf("grpcTlsKey")}` : settingOf("dataDir"),
    start: async () => {
      if (!tlsOn) return undefined;
      // Relays on one database present one CA: the fingerprint an install command pins holds for each of them.
      if (!givenCertificate && store.dialect === "postgres") await shareLinkCertificates(store, config.dataDir, log);
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
  const linkHost = config.grpcHost === "0.0.0.0" || config.grpcHost === "::" ? "127.0.0.1" : config.grpcHost;
  here.linkAddress = config.publicGrpcAddress ?? `${linkHost}:${link.port}`;
  return { link, tls, tlsOn };
}

/** A model file named by a local path is looked for on its machine: over this relay's link, or the relay's holding it. */
export function modelFiles(registry: AgentRegistry, fleet: Fleet | undefined): ModelFiles {
  const checkHere = (machineId: string, step: Extract<DeployStep, { kind: "checkModel" }>, signal?: AbortSignal) => {
    const session = registry.get(machineId);
    if (!session || session.state !== "open") return Promise.reject(new MakinaError("machine_offline", "The machine is not linked to this relay."));
    return session.runCommand("", step, { signal, idleTimeoutMs: 5000 });
  };
  const checkElsewhere = fleet?.serveModelFiles((machineId, step) => checkHere(machineId, step));
  return new ModelFiles((machineId, step, signal) => (registry.get(machineId)?.state === "open" ? checkHere(machineId, step, signal) : checkElsewhere?.(machineId, step)));
}

