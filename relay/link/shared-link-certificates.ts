import { renameSync } from "node:fs";
import { join } from "node:path";
import type { Logger } from "../../proto/index.js";
import type { Vault } from "../vault/index.js";
import { ensureLinkCertificates, readLinkCertificates, writeLinkCertificates, type LinkCertificates } from "./link-tls.js";

/** The setting that holds the link certificates every relay on one database presents. */
const LINK_CERTIFICATES = "link_certificates";

/**
 * Relays on one PostgreSQL database present one link CA, so the one fingerprint an install command pins holds
 * for every relay an agent may fail over to: the first relay stores its own (made on first start, or already in
 * its data directory) in the database, and every other relay writes the stored ones into its data directory
 * and presents them. The CA's private key is then in the database too, sealed with the secrets key (the vault),
 * which the database does not hold. A data directory whose CA differs is moved aside (`tls-replaced-<time>`), saying so: agents
 * that pinned it must run their install command again.
 */
export async function shareLinkCertificates(vault: Vault, dataDir: string, log: Logger): Promise<void> {
  // The first relay stores its own; another storing its own at the same moment: that one is taken.
  const shared = JSON.parse(await vault.getOrMake(LINK_CERTIFICATES, () => JSON.stringify(ensureLinkCertificates(dataDir)))) as LinkCertificates;
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
}
