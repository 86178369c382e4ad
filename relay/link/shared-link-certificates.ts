import { renameSync } from "node:fs";
import { join } from "node:path";
import type { Logger } from "../../proto/index.js";
import type { Store } from "../store/index.js";
import { ensureLinkCertificates, readLinkCertificates, writeLinkCertificates, type LinkCertificates } from "./link-tls.js";

/** The setting that holds the link certificates every relay on one database presents. */
const LINK_CERTIFICATES = "link_certificates";

/**
 * Relays on one PostgreSQL database present one link CA, so the one fingerprint an install command pins holds
 * for every relay an agent may fail over to: the first relay stores its own (made on first start, or already in
 * its data directory) in the database, and every other relay writes the stored ones into its data directory
 * and presents them. The CA's private key is then in the database too: protect it as the relays' data
 * directories. A data directory whose CA differs is moved aside (`tls-replaced-<time>`), saying so: agents
 * that pinned it must run their install command again.
 */
export async function shareLinkCertificates(store: Store, dataDir: string, log: Logger): Promise<void> {
  for (;;) {
    const stored = await store.settings.get(LINK_CERTIFICATES);
    if (stored === undefined) {
      if (await store.settings.setIfAbsent(LINK_CERTIFICATES, JSON.stringify(ensureLinkCertificates(dataDir)))) return;
      // Another relay stored its own at the same moment: take that one.
      continue;
    }
    const shared = JSON.parse(stored) as LinkCertificates;
    const mine = readLinkCertificates(dataDir);
    if (mine && mine.ca === shared.ca && mine.cert === shared.cert && mine.key === shared.key) return;
    if (mine) {
      // Kept beside, not lost: an operator who started the relays in the wrong order can put it back.
      const kept = join(dataDir, `tls-replaced-${Date.now()}`);
      renameSync(join(dataDir, "tls"), kept);
      log.warn(
        "this data directory's link CA is not the one the relays on this database share: presenting the shared one (agents that pinned this directory's CA must run their install command again)",
        { kept },
      );
    }
    writeLinkCertificates(dataDir, shared);
    return;
  }
}
