import { chmodSync, readFileSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { setTimeout as sleep } from "node:timers/promises";
import { relayPaths, settingOf, type RelayConfig } from "../config.js";
import { publicKeyPin, type LinkTls } from "../link/index.js";
import type { RelayApps } from "../http/create-relay-app.js";
import { listenHttp, type HttpListener } from "./http-listener.js";
import { isLoopbackAddress, reachWarning } from "./reach-warning.js";

import type { Shared } from "./relay-parts.js";

/** The gateway's listener, the admin API's (unless shared) and the install listener (with TLS on the link). */
export async function startListeners(s: Shared, apps: RelayApps, tls: LinkTls | undefined) {
  const { config, log, parts, here } = s;
  const https = config.tlsCert !== null && config.tlsKey !== null;
  const tlsFiles = https ? await parts.start({ name: "the HTTPS certificate", setting: `${settingOf("tlsCert")}, ${settingOf("tlsKey")}`, start: () => ({ cert: readFileSync(config.tlsCert!), key: readFileSync(config.tlsKey!) }) }) : undefined;
  // Slow clients cannot hold the relay: the headers must arrive within headerTimeoutMs and the whole request
  // (body included) within bodyTimeoutMs, or the connection gets 408; connections beyond maxConnections are refused.
  const limits = { headerTimeoutMs: config.headerTimeoutMs, bodyTimeoutMs: config.bodyTimeoutMs, maxConnections: config.maxConnections };
  const all: HttpListener[] = [];
  const listener = async (name: string, port: keyof RelayConfig, host: keyof RelayConfig, start: () => Promise<HttpListener>) => {
    const l = await parts.start({ name, setting: (err) => listenSetting(err, port, host), start, stop: (l) => l.close(2000) });
    all.push(l);
    return l;
  };
  const main = await listener(`the gateway listener (${config.host}:${config.port})`, "port", "host", () => listenHttp(apps.public, config.host, config.port, limits, tlsFiles));
  const admin =
    apps.admin && config.adminPort !== "shared"
      ? await listener(`the admin listener (${config.adminHost}:${config.adminPort})`, "adminPort", "adminHost", () => listenHttp(apps.admin!, config.adminHost, config.adminPort as number, limits, tlsFiles))
      : undefined;
  // What joining machines fetch, over TLS with the link's certificate, on the link's host: the install command
  // pins its key, so a machine checks whom it talks to before the token or anything else crosses the network.
  if (apps.install && tls) {
    const installer = await listener(`the install listener (${config.grpcHost}:${config.installPort})`, "installPort", "grpcHost", () =>
      listenHttp(apps.install!, config.grpcHost, config.installPort, limits, { cert: tls.certChain, key: tls.privateKey }),
    );
    const linkHostName = here.linkAddress.slice(0, here.linkAddress.lastIndexOf(":"));
    here.install = { url: `https://${linkHostName}:${installer.port}`, pin: publicKeyPin(tls.privateKey) };
  }
  // Passwords, session cookies and the admin token reach the admin listener: beyond loopback, in the clear,
  // unless a proxy this relay trusts terminates TLS in front of it.
  const adminHost = admin ? config.adminHost : config.host;
  if (!https && !config.trustProxy && !isLoopbackAddress(adminHost)) {
    log.warn("the admin API, sign-in and the web application answer beyond loopback without TLS: passwords, session cookies and the admin token cross the network in the clear; give the relay a certificate (MAKINA_TLS_CERT, MAKINA_TLS_KEY) or put it behind a TLS proxy it trusts (MAKINA_TRUST_PROXY)", { host: adminHost });
  }
  const everyAddress = config.host === "0.0.0.0" || config.host === "::";
  const publicHost = config.publicAddress ?? hostname();
  here.relayUrl = config.publicUrl ?? (everyAddress ? main.url.replace(`//${config.host.includes(":") ? `[${config.host}]` : config.host}:`, `//${publicHost.includes(":") ? `[${publicHost}]` : publicHost}:`) : main.url);
  // An install command names the link and where its script comes from: said when either reaches this computer only.
  here.reach = reachWarning(config, [here.linkAddress, here.install?.url ?? here.relayUrl]);
  return { main, adminUrl: admin?.url ?? main.url, all };
}

/** The setting that changes a listener that could not listen: its port when taken or privileged, else its host. */
export function listenSetting(err: unknown, port: keyof RelayConfig, host: keyof RelayConfig): string {
  const code = (err as NodeJS.ErrnoException).code;
  return code === "EADDRNOTAVAIL" || code === "ENOTFOUND" ? settingOf(host) : settingOf(port);
}

/**
 * The drain before the parts stop: no new connections, the live event streams ended, no new requests from
 * other relays; the requests in flight finish within `drainTimeoutMs`, idle connections closed as they go idle.
 */
export async function drain(s: Shared, listeners: HttpListener[], inFlight: () => number, drainFleet: () => void): Promise<void> {
  const { config, log, events } = s;
  for (const l of listeners) l.stopAccepting();
  events.close();
  drainFleet();
  log.info("relay stopping: no new connections; draining requests in flight", { inFlight: inFlight(), graceMs: config.drainTimeoutMs });
  const deadline = Date.now() + config.drainTimeoutMs;
  while (inFlight() > 0 && Date.now() < deadline) {
    for (const l of listeners) l.closeIdle();
    await sleep(50);
  }
  if (inFlight() > 0) {
    log.warn("drain period over: ending requests still in flight", { inFlight: inFlight() });
    s.ending.abort();
  }
  for (const l of listeners) l.closeIdle();
}

/**
 * Lets `makina admin --data-dir` on this host find the relay (its admin API is at admin_url). Readable by this
 * user only, as its neighbours (the database, the admin token) are; an older file is made so too.
 */
export function writeRelayInfo(config: RelayConfig, at: { url: string; adminUrl: string; linkAddress: string; linkTls: boolean; linkCaSha256: string | null; install: { url: string; pin: string } | null }): void {
  const info = relayPaths(config.dataDir).info;
  const text = { url: at.url, admin_url: at.adminUrl, link_address: at.linkAddress, link_tls: at.linkTls, link_ca_sha256: at.linkCaSha256, install_url: at.install?.url ?? null, install_pin: at.install?.pin ?? null, pid: process.pid };
  writeFileSync(info, JSON.stringify(text, null, 2) + "\n", { mode: 0o600 });
  chmodSync(info, 0o600);
}

