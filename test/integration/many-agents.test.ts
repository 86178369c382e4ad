import { spawnSync } from "node:child_process";
import { once } from "node:events";
import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { GrpcDialer } from "../../agent/link/grpc-dialer.js";
import { PROTOCOL_VERSION, type AgentToRelay, type LinkEnd } from "../../proto/index.js";
import { startTestGateway, type TestGateway } from "../helpers/test-gateway.js";
import { OP } from "../helpers/operator.js";

/** A machine reduced to its link: it says hello over gRPC and heartbeats, as an idle agent does. */
function simulatedAgent(server: string, machineId: string, token: string, heartbeatMs: number) {
  let welcomed = false;
  /** The relay took the link (its headers came). */
  let reached = false;
  let link: LinkEnd<AgentToRelay> | undefined;
  const dialer = new GrpcDialer(server, { machineId, token }, { caSha256: null, caCacheFile: "/dev/null", caFile: null, tls: false });
  link = dialer.dial({ send: (m) => m.type === "welcome" && (welcomed = true), close: () => (link = undefined), reached: () => (reached = true) });
  link.send({ type: "hello", protocolVersion: PROTOCOL_VERSION, agentVersion: "sim", hardware: { platform: "linux", os: "Sim", arch: "x64", cpuModel: "cpu", cpuPhysicalCores: 1, cpuLogicalCores: 1, memoryBytes: 1, gpus: [], disks: [], accelerators: [] } });
  const beat = setInterval(() => link?.send({ type: "heartbeat", sentAtMs: Date.now() }), heartbeatMs);
  return {
    get welcomed() {
      return welcomed;
    },
    get reached() {
      return reached;
    },
    close() {
      clearInterval(beat);
      link?.close("done");
      dialer.close();
    },
  };
}

describe("1,000 machines connecting and heartbeating while the gateway serves", () => {
  let gw: TestGateway;
  const agents: ReturnType<typeof simulatedAgent>[] = [];
  beforeAll(async () => {
    gw = await startTestGateway({ runtime: "fake", relayFlags: { heartbeatIntervalMs: 1000 } });
  });
  afterAll(async () => {
    for (const a of agents) a.close();
    await gw?.close();
  });

  it("takes them all online and keeps them, while every request is served", async () => {
    const machines = [];
    for (let i = 0; i < 1000; i++) machines.push(await gw.relay.control.machines.create(OP, { org: gw.orgId, name: `sim-${i}` }));
    let served = 0;
    let failed = 0;
    let stop = false;
    // Requests keep coming the whole time.
    const traffic = (async () => {
      while (!stop) {
        const res = await fetch(`${gw.baseURL}/chat/completions`, {
          method: "POST",
          headers: { authorization: `Bearer ${gw.apiKey}`, "content-type": "application/json" },
          body: JSON.stringify({ model: gw.modelId, messages: [{ role: "user", content: "still here" }] }),
        });
        await res.text();
        if (res.status === 200) served++;
        else failed++;
      }
    })();
    try {
      for (const { machine, token } of machines) agents.push(simulatedAgent(gw.relay.linkAddress, machine.id, token, 1000));
      await vi.waitFor(() => expect([gw.relay.registry.size, agents.filter((a) => a.welcomed).length]).toEqual([1001, 1000]), { timeout: 60_000, interval: 100 });
      // Five heartbeat periods: a link silent for 3.5 of them would be dropped; none is.
      const before = served;
      await new Promise((r) => setTimeout(r, 5_000));
      expect(gw.relay.registry.size).toBe(1001);
      expect((await gw.relay.store.machines.listByOrg(gw.orgId)).filter((m) => m.state === "online")).toHaveLength(1001);
      expect(served - before).toBeGreaterThan(10);
    } finally {
      stop = true;
      await traffic;
    }
    expect(failed).toBe(0);
  }, 120_000);

  it("answers a link at once, before the machine's credentials are checked (so a busy relay is waited for, not left)", async () => {
    const { machine, token } = await gw.relay.control.machines.create(OP, { org: gw.orgId, name: "held" });
    // The database holds the machine's lookup back, as under thousands of links at once.
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const machines = gw.relay.store.machines;
    const get = machines.getForLink.bind(machines);
    const lookup = vi.spyOn(machines, "getForLink").mockImplementation(async (id) => (id === machine.id ? (await held, get(id)) : get(id)));
    const agent = simulatedAgent(gw.relay.linkAddress, machine.id, token, 1000);
    try {
      await vi.waitFor(() => expect(agent.reached).toBe(true), { timeout: 10_000, interval: 20 });
      expect(agent.welcomed).toBe(false);
      release();
      await vi.waitFor(() => expect(agent.welcomed).toBe(true), { timeout: 10_000, interval: 20 });
    } finally {
      release();
      lookup.mockRestore();
      agent.close();
    }
  });
});

describe("a relay too busy to accept for a moment", () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({ runtime: "fake" });
  });
  afterAll(() => gw?.close());

  it("still lets 1,500 machines' connections in at once: the kernel queues them until it accepts", () => {
    // The child dials while this process (the relay's) is blocked in spawnSync: nothing is accepted meanwhile,
    // as in a relay busy with a storm of links. A full accept queue drops the rest, which TCP retries only
    // after a second or more.
    const dial = `
      const net = require("node:net");
      const [host, port] = process.argv[1].split(":");
      let connected = 0;
      const sockets = Array.from({ length: 1500 }, () => net.connect({ host, port: Number(port) }, () => connected++).on("error", () => {}));
      setTimeout(() => { console.log(connected); for (const s of sockets) s.destroy(); }, 800);`;
    const out = spawnSync(process.execPath, ["-e", dial, gw.relay.linkAddress], { encoding: "utf8", timeout: 20_000 });
    expect(Number(out.stdout.trim())).toBe(1500);
  });
});

describe("a relay stopping while machines connect", () => {
  it("ends a connection still in its TLS handshake instead of letting it live on past the stop", async () => {
    const gw = await startTestGateway({ runtime: "fake", relayFlags: { grpcTls: "on" } });
    const [host, port] = gw.relay.linkAddress.split(":") as [string, string];
    // Connected, its handshake not begun: grpc-js has no session for it yet.
    const socket = connect({ host, port: Number(port) });
    await once(socket, "connect");
    const closed = once(socket, "close");
    await gw.close();
    await closed;
    expect(socket.destroyed).toBe(true);
  });
});
