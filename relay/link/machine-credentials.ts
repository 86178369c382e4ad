import { hashSecret, hashesEqual } from "../keys/index.js";
import type { Machine, Store } from "../store/index.js";

/**
 * Checks a machine's ID and token as the link does (the token compared by hash, in constant time): the
 * machine, or why it is refused, in words fit for the machine's owner.
 */
export async function checkMachineCredentials(store: Store, machineId: string, token: string): Promise<{ machine: Machine } | { refusal: string; revoked: boolean }> {
  const found = machineId ? await store.machines.getForLink(machineId) : undefined;
  if (found?.machine.revokedAt) return { refusal: "This machine was revoked; add it again to get a new token.", revoked: true };
  if (!found || !hashesEqual(found.tokenHash, hashSecret(token))) return { refusal: "Unknown machine ID or machine token rejected.", revoked: false };
  return { machine: found.machine };
}
