/** A host name (labels of letters, digits and hyphens), an IPv4 address, or an IPv6 address in brackets; and a port. */
const LINK_ADDRESS = /^(?:(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]+\]):(\d{1,5})$/;

/**
 * Whether `address` is a `host:port` agents can dial, and nothing more: it goes into the install command a
 * person pastes into a root shell, so a value read from the database (another relay's address) that holds
 * anything else (a space, a `;`, a `$(…)`) is left out rather than printed. `anyPort`: port 0 too (a listener's
 * "any free port").
 */
export function isLinkAddress(address: string, options: { anyPort?: boolean } = {}): boolean {
  const m = LINK_ADDRESS.exec(address);
  return m !== null && address.length <= 260 && Number(m[1]) >= (options.anyPort ? 0 : 1) && Number(m[1]) <= 65535;
}
