import { networkInterfaces } from "node:os";
import type { RelayConfig } from "../config.js";

/** Whether a host (or `host:port`, or a URL) names this computer only: 127.x, localhost or ::1. */
export function isLoopbackAddress(address: string): boolean {
  return /^(?:[a-z]+:\/\/)?(?:127\.|localhost(?::|\/|$)|\[::1\]|::1$)/i.test(address);
}

/**
 * This computer's one network address (not loopback, not link-local), if it has exactly one: what the Add machine
 * page offers as `--public-address`. IPv4 first; an IPv6 address only where there is no IPv4 one.
 */
export function onlyNetworkAddress(interfaces = networkInterfaces()): string | null {
  const found = Object.values(interfaces)
    .flatMap((list) => list ?? [])
    .filter((a) => !a.internal && !/^169\.254\./.test(a.address) && !/^fe80:/i.test(a.address));
  const v4 = [...new Set(found.filter((a) => a.family === "IPv4").map((a) => a.address))];
  const v6 = [...new Set(found.filter((a) => a.family === "IPv6").map((a) => a.address))];
  if (v4.length === 1) return v4[0]!;
  return v4.length === 0 && v6.length === 1 ? v6[0]! : null;
}

/**
 * Why the install commands this relay prints work on this computer only, with exactly what to change (each
 * setting named as both `makina up` and `makina relay` take it); null when every address they print reaches
 * beyond this computer. `printed`: the addresses an install command names (the link's, and where the script
 * comes from).
 */
export function reachWarning(config: Pick<RelayConfig, "grpcHost" | "host" | "publicAddress" | "publicUrl" | "publicGrpcAddress">, printed: string[], only = onlyNetworkAddress()): string | null {
  const loopback = printed.filter(isLoopbackAddress);
  if (loopback.length === 0) return null;
  const remedies: string[] = [];
  if (isLoopbackAddress(config.grpcHost)) remedies.push(`the agents' link listens on ${config.grpcHost} only: start the relay with MAKINA_GRPC_HOST=0.0.0.0 (makina relay --grpc-host 0.0.0.0)`);
  const offer = only ? ` (this computer's one network address is ${only}: --public-address ${only})` : "";
  remedies.push(
    config.publicAddress !== null
      ? `--public-address ${config.publicAddress} (MAKINA_PUBLIC_ADDRESS) names this computer only: give the name or address the other machines reach it at${offer}`
      : `start the relay with --public-address HOST (MAKINA_PUBLIC_ADDRESS), HOST being the name or address the other machines reach this computer at${offer}`,
  );
  return `It names ${loopback.join(" and ")}, which only this computer can reach: ${remedies.join("; and ")}.`;
}
