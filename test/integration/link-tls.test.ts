import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { resolveAgentConfig, startAgent, type Agent } from "../../agent/index.js";
import { silentLogger } from "../../proto/index.js";
import { certificateSha256, loadLinkTls } from "../../relay/link/index.js";
import { operatorCertificates, type OperatorCertificates } from "../helpers/certificates.js";
import { startTestGateway, type TestGateway } from "../helpers/test-gateway.js";
import { OP } from "../helpers/operator.js";
import { resolveRelayConfig } from "../../relay/index.js";
import { startRelay } from "../../relay/start/start-relay.js";

describe("the agents' link over TLS, trusting only the relay's own CA", () => {
  let gw: TestGateway;
  const agents: Agent[] = [];
  const dirs: string[] = [];
  const agentFor = async (flags: Record<string, unknown>) => {
    const { machine, token } = await gw.relay.control.machines.create(OP, { org: gw.orgId, name: `box-${agents.length}` });
    const dataDir = mkdtempSync(join(tmpdir(), "makina-tls-agent-"));
    dirs.push(dataDir);
    const agent = await startAgent(
      resolveAgentConfig({ flags: { server: gw.relay.linkAddress, machineId: machine.id, token, dataDir, threads: 1, gpu: false, reconnectMinMs: 50, reconnectMaxMs: 200, ...flags } }),
      { log: silentLogger() },
    );
    agents.push(agent);
    return { agent, machineId: machine.id, dataDir };
  };

  beforeAll(async () => {
    gw = await startTestGateway({ relayFlags: { grpcTls: "on" }, runtime: "fake" });
  });
  afterAll(async () => {
    await Promise.all(agents.map((a) => a.stop()));
    await gw?.close();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it("serves TLS with a CA made on first start, whose fingerprint the install command carries", async () => {
    expect(gw.relay.linkTls).toBe(true);
    expect(gw.relay.linkCaSha256).toMatch(/^[0-9a-f]{64}$/);
    const { installCommand, caSha256 } = await gw.relay.control.machines.create(OP, { org: gw.orgId, name: "listed" });
    expect(caSha256).toBe(gw.relay.linkCaSha256);
    expect(installCommand).toContain(`--ca-sha256 ${gw.relay.linkCaSha256}`);
    const info = JSON.parse(readFileSync(join(gw.dataDir, "relay.json"), "utf8")) as { link_tls: boolean; link_ca_sha256: string };
    expect(info).toMatchObject({ link_tls: true, link_ca_sha256: gw.relay.linkCaSha256 });
  });

  it("connects an agent that pins the relay's CA, serves requests over it, and keeps the CA it checked", async () => {
    const { agent, machineId, dataDir } = await agentFor({ caSha256: gw.relay.linkCaSha256 });
    await agent.link.whenOnline();
    expect(gw.relay.registry.get(machineId)).toBeDefined();
    expect(certificateSha256(readFileSync(join(dataDir, "relay-ca.pem"), "utf8"))).toBe(gw.relay.linkCaSha256);
    // The test gateway's own agent pins the CA too: a request crosses the TLS link end to end.
    const res = await fetch(`${gw.baseURL}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${gw.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ model: gw.modelId, messages: [{ role: "user", content: "over tls" }] }),
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { choices: { message: { content: string } }[] }).choices[0]!.message.content).toBe("over tls");
  });

  it("refuses a relay presenting a certificate from another CA, and sends it nothing", async () => {
    const otherDir = mkdtempSync(join(tmpdir(), "makina-other-ca-"));
    dirs.push(otherDir);
    const other = loadLinkTls(otherDir);
    const { agent, machineId } = await agentFor({ caSha256: other.caSha256 });
    await vi.waitFor(() => expect(agent.link.lastError).toContain("presented no certificate from the CA this machine trusts"), { timeout: 5_000, interval: 20 });
    expect(agent.link.state).not.toBe("online");
    // Not even the hello with the token went out: the relay never saw this machine.
    expect((await gw.relay.control.machines.get(OP, machineId)).state).toBe("pending");
  });

  it("cannot talk plaintext to the TLS link", async () => {
    const { agent, machineId } = await agentFor({});
    await vi.waitFor(() => expect(agent.link.lastError).toBeTruthy(), { timeout: 5_000, interval: 20 });
    expect(agent.link.state).not.toBe("online");
    expect((await gw.relay.control.machines.get(OP, machineId)).state).toBe("pending");
  });
});

describe("the agents' link over TLS with a certificate the relay was given", () => {
  let gw: TestGateway;
  let certs: OperatorCertificates;

  beforeAll(async () => {
    certs = operatorCertificates();
    gw = await startTestGateway({
      relayFlags: { grpcTls: "on", grpcTlsCert: certs.cert, grpcTlsKey: certs.key },
      agentFlags: { caFile: certs.ca },
      runtime: "fake",
    });
  });
  afterAll(async () => {
    await gw?.close();
    rmSync(certs.dir, { recursive: true, force: true });
  });

  it("serves it, tells new machines to use TLS, and an agent trusting that CA is served over it", async () => {
    expect([gw.relay.linkTls, gw.relay.linkCaSha256]).toEqual([true, null]);
    expect((await gw.relay.control.machines.create(OP, { org: gw.orgId, name: "told" })).installCommand).toMatch(/ --tls$/);
    expect((await gw.relay.control.machines.create(OP, { org: gw.orgId, name: "told-again" })).installRefused).toBeNull();
    expect(gw.relay.registry.get(gw.machineId)).toBeDefined();
    const res = await fetch(`${gw.baseURL}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${gw.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ model: gw.modelId, messages: [{ role: "user", content: "given cert" }] }),
    });
    expect(res.status).toBe(200);
  });
});

describe("a relay that would serve the install script over plain HTTP beyond loopback", () => {
  it("prints no install command, saying why and how to have one; the machine's token and address are still given", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "makina-plain-"));
    const relay = await startRelay(resolveRelayConfig({ flags: { dataDir, port: 0, grpcPort: 0, grpcHost: "127.0.0.1", grpcTls: "off", publicUrl: "http://relay.example.com:8080" } }), { log: silentLogger() });
    try {
      const org = await relay.control.orgs.create(OP, { name: "Plain" });
      const made = await relay.control.machines.create(OP, { org: org.id, name: "box" });
      expect(made.installCommand).toBeNull();
      expect(made.installRefused).toBe(
        "No install command: this relay serves the install script over plain HTTP (http://relay.example.com:8080), so the script and this machine's token would cross the network in the clear. Turn TLS on for the agents' link (--grpc-tls on, the default when it listens beyond loopback), or serve the relay over HTTPS (--tls-cert and --tls-key, or a proxy with --public-url https://…), then rotate this machine's token for a command.",
      );
      expect([made.token, made.server]).toEqual([expect.stringMatching(/^mk_mach_/), relay.linkAddress]);
    } finally {
      await relay.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
