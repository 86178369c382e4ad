import { relayPaths, settingOf } from "../config.js";
import { GatewayDirectory } from "../routing/index.js";
import { neverReachedDatabase } from "../health/index.js";
import { openStore, type DatabaseLocation } from "../store/index.js";
import { ChangeFeed } from "../cluster/index.js";
import { lockDataDir } from "../data-dir-lock.js";
import { openVault } from "../vault/index.js";
import { peerSecret } from "./peer-settings.js";
import { ensureAdminToken } from "./admin-token.js";

import type { Data, Shared } from "./relay-parts.js";

/** How the secrets key is given, as a failed start names it. */
export const secretsKeySetting = `${settingOf("secretsKeyFile")}, or MAKINA_SECRETS_KEY`;

/** The data directory, the database, the secrets key, the admin token, the gateway's directory and (on PostgreSQL) the change feed. */
export async function startData(s: Shared): Promise<Data> {
  const { config, log, parts, registry, events, storage, here } = s;
  await parts.start({ name: "the data directory", setting: settingOf("dataDir"), start: () => lockDataDir(config.dataDir), stop: (lock) => lock.release() });
  const location: DatabaseLocation = config.database ? { kind: "postgres", url: config.database } : { kind: "sqlite", file: relayPaths(config.dataDir).database };
  const store = await parts.start({
    name: "the database",
    setting: settingOf(config.database ? "database" : "dataDir"),
    start: () => openStore(location, { onWriteError: (what, err) => storage.failed(what, err), relayId: s.relayId }),
    stop: (store) => store.close(),
  });
  if (store.migrated > 0) log.info("database schema brought up to date", { database: store.dialect, migrations: store.migrated });
  // Writes retried in the background (a deployment to resume) give up before the database closes.
  await parts.start({ name: "the database's retries", start: () => storage, stop: (st) => st.close() });
  const vault = await parts.start({
    name: "the secrets key",
    setting: secretsKeySetting,
    start: () =>
      openVault({
        settings: store.settings,
        dataDir: config.dataDir,
        source: config.secretsKey ? { kind: "value", text: config.secretsKey, name: "MAKINA_SECRETS_KEY" } : config.secretsKeyFile ? { kind: "file", path: config.secretsKeyFile } : { kind: "data-dir" },
        shared: location.kind === "postgres",
        setting: secretsKeySetting,
        log,
      }),
  });
  const adminToken = await parts.start({
    name: "the admin token",
    start: async () => {
      // One relay per SQLite file (the data directory's lock): no link exists yet, so no machine is online. On
      // PostgreSQL other relays may hold links: the change feed marks offline those of relays gone.
      if (location.kind === "sqlite") await storage.attempt("machine states", () => store.machines.markAllOffline());
      return ensureAdminToken(store, config.dataDir, log);
    },
  });
  const directory = await parts.start({ name: "the gateway directory", start: () => GatewayDirectory.open(store, log.child({ component: "directory" })), stop: (d) => d.close() });
  if (location.kind === "sqlite") return { store, directory, adminToken, feed: undefined, vault, peerSecret: undefined };
  // The secret the relays on this database share: it tags the change feed's own notifications, seals the bus and
  // the direct connections between relays.
  const secret = await parts.start({ name: "the relays' shared secret", setting: secretsKeySetting, start: () => peerSecret(vault) });
  const feed = await parts.start({
    name: "the change feed",
    setting: settingOf("database"),
    start: () =>
      ChangeFeed.start({
        url: location.url,
        relayId: s.relayId,
        describe: () => ({ url: here.relayUrl || null, linkAddress: here.linkAddress || null }),
        store,
        directory,
        leaseMs: config.changeLeaseMs,
        // Its own notifications are tagged with the relays' shared secret: another client of the database cannot forge them.
        secret,
        hooks: {
          machineChanged: (machineId) => registry.get(machineId)?.end(),
          userChanged: (userId) => here.userChanged(userId),
          machinesOffline: (machines) => machines.forEach((m) => events.emit({ type: "machine", orgId: m.orgId, machineId: m.id })),
          caughtUp: async () => {
            // A machine revoked or given a new token while this relay could not hear keeps no link here.
            await Promise.all(
              registry.all().map(async (session) => {
                if (!(await session.credentialsHold())) session.end("This machine was revoked or given a new token; run its new install command.");
              }),
            );
            // Another relay may have taken this one for gone and marked its machines offline.
            await store.machines.markHeld(registry.all().filter((session) => session.state === "open").map((session) => session.machineId));
          },
        },
        log: log.child({ component: "changes" }),
      }),
    // Off the relays table once nothing more is served (admin writes answered too): writers stop waiting for it.
    stop: (f) => f.stop(),
  });
  // Every write answers once every other relay has it (or has stopped serving from memory); a write that never
  // reached PostgreSQL changed nothing to wait for.
  store.notices.listen((_change, failure) => (failure !== undefined && neverReachedDatabase(failure) ? undefined : feed.barrier()));
  return { store, directory, adminToken, feed, vault, peerSecret: secret };
}

