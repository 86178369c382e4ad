import { isIP } from "node:net";

/** Where an address leads: the internet, or somewhere a fetch on a user's behalf must not be steered to. */
export type AddressClass = "public" | "loopback" | "link-local" | "private" | "reserved";

/** The 4 bytes of a dotted IPv4 address. */
function ipv4Bytes(ip: string): number[] {
  return ip.split(".").map(Number);
}

/** The 16 bytes of an IPv6 address (`::` expanded, a trailing dotted IPv4 part included); null if it is not one. */
function ipv6Bytes(ip: string): number[] | null {
  let text = ip;
  let tail: number[] = [];
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    tail = ipv4Bytes(dotted[1]!);
    text = text.slice(0, -dotted[1]!.length) + "0:0";
  }
  const [head, rest] = text.split("::") as [string, string | undefined];
  const groups = (part: string) => (part === "" ? [] : part.split(":").map((g) => parseInt(g, 16)));
  const left = groups(head);
  const right = rest === undefined ? [] : groups(rest);
  const all = rest === undefined ? left : [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
  if (all.length !== 8 || all.some((g) => !(g >= 0 && g <= 0xffff))) return null;
  const bytes = all.flatMap((g) => [g >> 8, g & 0xff]);
  if (tail.length) bytes.splice(12, 4, ...tail);
  return bytes;
}

function ipv4Class([a, b, c]: number[]): AddressClass {
  if (a === 127 || a === 0) return "loopback"; // 0.0.0.0 reaches this machine, too
  if (a === 169 && b === 254) return "link-local"; // where clouds serve instance metadata and credentials
  if (a === 10 || (a === 172 && b! >= 16 && b! <= 31) || (a === 192 && b === 168) || (a === 100 && b! >= 64 && b! <= 127)) return "private";
  // IETF protocol assignments, documentation, benchmarking, multicast and the rest of class E.
  if ((a === 192 && b === 0 && (c === 0 || c === 2)) || (a === 198 && (b === 18 || b === 19)) || (a === 198 && b === 51 && c === 100) || (a === 203 && b === 0 && c === 113) || a! >= 224) return "reserved";
  return "public";
}

/**
 * The class of an IP address, v4 or v6, read from its bytes: an IPv4 address inside an IPv6 one counts as that
 * IPv4 address however it is written (`::ffff:127.0.0.1`, `::ffff:7f00:1`, NAT64's `64:ff9b::7f00:1`, 6to4's
 * `2002:7f00:1::`), so no spelling reaches this machine or its network as "public". Not an address: "reserved".
 */
export function addressClass(address: string): AddressClass {
  const ip = address.replace(/^\[|\]$/g, "").toLowerCase().replace(/%.*$/, "");
  if (isIP(ip) === 4) return ipv4Class(ipv4Bytes(ip));
  if (isIP(ip) !== 6) return "reserved";
  const b = ipv6Bytes(ip);
  if (!b) return "reserved";
  const zeros = (from: number, to: number) => b.slice(from, to).every((x) => x === 0);
  const v4 = (at: number) => ipv4Class(b.slice(at, at + 4));
  if (zeros(0, 15) && (b[15] === 0 || b[15] === 1)) return "loopback"; // :: and ::1
  if (zeros(0, 10) && b[10] === 0xff && b[11] === 0xff) return v4(12); // IPv4-mapped
  if (zeros(0, 12)) return v4(12); // IPv4-compatible (deprecated)
  if (zeros(0, 8) && b[8] === 0xff && b[9] === 0xff && zeros(10, 12)) return v4(12); // IPv4-translated (SIIT)
  if (b[0] === 0x20 && b[1] === 0x01 && b[2] === 0x00 && b[3] === 0x00) return "reserved"; // Teredo: an IPv4 address inside, obfuscated
  if (b[0] === 0x00 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b) return zeros(4, 12) ? v4(12) : "private"; // NAT64, and its local-use /48
  if (b[0] === 0x20 && b[1] === 0x02) return v4(2); // 6to4
  if (b[0] === 0xfe && (b[1]! & 0xc0) === 0x80) return "link-local";
  if ((b[0]! & 0xfe) === 0xfc || (b[0] === 0xfe && (b[1]! & 0xc0) === 0xc0)) return "private"; // unique local, old site-local
  if (b[0] === 0xff || (b[0] === 0x20 && b[1] === 0x01 && b[2] === 0x0d && b[3] === 0xb8) || b[0] === 0x01 && zeros(1, 8)) return "reserved"; // multicast, documentation, discard
  return "public";
}
