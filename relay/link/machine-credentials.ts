import { hashSecret, hashesEqual } from "../keys/index.js";
import type { Machine, Store } from "../store/index.js";

/**
 * Checks a machine's ID and token as the link does (the token compared by hash, in constant time): the
 * machine, or why it is refused, in words fit for the machine's owner.
 */
export async function checkMachineCredentials(store: Store, machineId: string, token: string): Promise<{ machine: Machine } | { refusal: string; revoked: boolean }> {
  const machine = machineId ? await store.machines.get(machineId) : undefined;
  if (machine?.revokedAt) return { refusal: "This machine was revoked; add it again to get a new token.", revoked: true };
  const storedHash = machine ? await store.machines.tokenHash(machine.id) : undefined;
  if (!machine || !storedHash || !hashesEqual(storedHash, hashSecret(token))) return { refusal: "Unknown machine ID or machine token rejected.", revoked: false };
  return { machine };
}
