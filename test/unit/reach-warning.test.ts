import { describe, expect, it } from "vitest";
import { onlyNetworkAddress, reachWarning } from "../../relay/start/reach-warning.js";

/** A relay's settings as `makina up` leaves them: the link on every address, the web application on loopback. */
const quickstart = { grpcHost: "0.0.0.0", host: "127.0.0.1", publicAddress: null, publicUrl: null, publicGrpcAddress: null };

describe("what the install command's warning says", () => {
  it("names the setting that makes the command work elsewhere, and no flag that changes nothing", () => {
    const said = reachWarning(quickstart, ["127.0.0.1:8081", "https://127.0.0.1:8083"], null)!;
    expect(said).toBe(
      "It names 127.0.0.1:8081 and https://127.0.0.1:8083, which only this computer can reach: start the relay with --public-address HOST (MAKINA_PUBLIC_ADDRESS), HOST being the name or address the other machines reach this computer at.",
    );
    expect(said).not.toMatch(/--grpc-host|--host/);
  });

  it("offers this computer's one network address", () => {
    expect(reachWarning(quickstart, ["127.0.0.1:8081"], "192.0.2.2")).toContain("(this computer's one network address is 192.0.2.2: --public-address 192.0.2.2)");
  });

  it("says the link must listen beyond loopback when it does not, and that a loopback public address is one", () => {
    expect(reachWarning({ ...quickstart, grpcHost: "127.0.0.1" }, ["127.0.0.1:8081", "http://127.0.0.1:8080"], null)).toContain(
      "the agents' link listens on 127.0.0.1 only: start the relay with MAKINA_GRPC_HOST=0.0.0.0 (makina relay --grpc-host 0.0.0.0); and start the relay with --public-address HOST",
    );
    expect(reachWarning({ ...quickstart, publicAddress: "localhost" }, ["localhost:8081"], null)).toContain("--public-address localhost (MAKINA_PUBLIC_ADDRESS) names this computer only");
  });

  it("says nothing once every address reaches beyond this computer", () => {
    expect(reachWarning({ ...quickstart, publicAddress: "10.0.0.5" }, ["10.0.0.5:8081", "https://10.0.0.5:8083"], null)).toBeNull();
    expect(reachWarning(quickstart, ["relay.example.com:8081", "https://relay.example.com"], null)).toBeNull();
  });

  it("finds the one network address, leaving out loopback and link-local ones, and none among several", () => {
    const nic = (address: string, family: "IPv4" | "IPv6", internal = false) => ({ address, family, internal, netmask: "", mac: "", cidr: null, ...(family === "IPv6" ? { scopeid: 0 } : {}) }) as never;
    expect(onlyNetworkAddress({ lo: [nic("127.0.0.1", "IPv4", true)], eth0: [nic("192.0.2.2", "IPv4"), nic("fd00::2", "IPv6"), nic("fe80::1", "IPv6")] })).toBe("192.0.2.2");
    expect(onlyNetworkAddress({ eth0: [nic("192.0.2.2", "IPv4")], eth1: [nic("198.51.100.7", "IPv4")] })).toBeNull();
    expect(onlyNetworkAddress({ eth0: [nic("169.254.1.1", "IPv4"), nic("2001:db8::5", "IPv6")] })).toBe("2001:db8::5");
    expect(onlyNetworkAddress({ lo: [nic("127.0.0.1", "IPv4", true)] })).toBeNull();
  });
});
