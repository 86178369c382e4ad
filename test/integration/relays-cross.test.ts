import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { resolveAgentConfig, startAgent } from "../../agent/index.js";
import { resolveRelayConfig } from "../../relay/index.js";
import { startRelay, type RelayInternals as Relay } from "../../relay/start/start-relay.js";
import { createLogger, silentLogger } from "../../proto/index.js";
import type { Compatibility, LogPage, Overview } from "../../relay/admin-contract/index.js";
import { testModelPath } from "../helpers/models.js";
import { emptyDatabase } from "../helpers/databases.js";
import { startNats, startNatsRequiringCredentials, type NatsServer } from "../helpers/nats-server.js";
import { startTestGateway, type TestGateway } from "../helpers/test-gateway.js";
import { OP } from "../helpers/operator.js";
import { BusSeal } from "../../relay/cluster/bus-seal.js";
import { readSecretsKeyFile, SecretsKey } from "../../relay/vault/index.js";

/**
 * Any relay serves any stack: relay A holds the agent's link (the stand-in model of test/fakes), relay B
 * shares A's PostgreSQL database and reaches A over a real nats-server of this file's own. Requests sent to B
 * are served through A: once over B's direct connection to A (the default), once over NATS (B started with
 * `--peer-address off`).
 */
describe.each([{ via: "direct" as const }, { via: "nats" as const }])("a request that lands on another relay than the machine's, $via", ({ via }) => {
  let nats: NatsServer;
  let gw: TestGateway;
  let b: Relay;
  let bDir: string;
  const viaB = () => new OpenAI({ baseURL: `${b.url}/v1`, apiKey: gw.apiKey, maxRetries: 0 });
  const chat = (relay: Relay, content: string, extra: Record<string, unknown> = {}) =>
    fetch(`${relay.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${gw.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "stories", messages: [{ role: "user", content }], ...extra }),
    });

  const scrape = async (relay: Relay) => (await (await fetch(`${relay.adminUrl}/metrics`, { headers: { authorization: `Bearer ${gw.relay.adminToken}` } })).text()).split("\n").filter((l) => l && !l.startsWith("#"));
  const otherRelays = async (relay: Relay) => (await scrape(relay)).filter((l) => l.startsWith("makina_other_relays"));

  beforeAll(async () => {
    nats = await startNats();
    const location = await emptyDatabase("postgres");
    const database = location.kind === "postgres" ? location.url : "";
    gw = await startTestGateway({ runtime: "fake", relayFlags: { database, nats: nats.url } });
    bDir = mkdtempSync(join(tmpdir(), "makina-relay-b-"));
    b = await startRelay(
      resolveRelayConfig({ flags: { dataDir: bDir, database, nats: nats.url, secretsKeyFile: join(gw.dataDir, "secrets.key"), port: 0, grpcPort: 0, grpcHost: "127.0.0.1", drainTimeoutMs: 500, ...(via === "nats" ? { peerAddress: "off" } : {}) } }),
      { log: process.env.MAKINA_TEST_LOG ? createLogger({ level: "debug" }) : silentLogger() },
    );
    // B learns what A holds from A's next announcement (and, by default, dials A directly).
    await vi.waitFor(async () => expect((await chat(b, "ready?")).status).toBe(200), { timeout: 10_000, interval: 100 });
    if (via === "direct") await vi.waitFor(async () => expect(await otherRelays(b)).toEqual([expect.stringContaining('via="direct"')]), { timeout: 10_000, interval: 100 });
  });
  afterAll(async () => {
    await b?.stop();
    await gw?.close();
    await nats?.close();
    if (bDir) rmSync(bDir, { recursive: true, force: true });
  });

  it("is served through the relay holding the machine's link, streamed and not, with its usage", async () => {
    const answer = await viaB().chat.completions.create({ model: "stories", messages: [{ role: "user", content: "once upon a time" }] });
    expect(answer.choices[0]!.message.content).toBe("once upon a time");
    expect(answer.usage).toMatchObject({ prompt_tokens: 4, completion_tokens: 4, total_tokens: 8 });

    // 200 words: more than the credit a request starts with, so the answer only completes if credit is granted as it is read.
    const long = Array.from({ length: 200 }, (_, i) => `w${i}`).join(" ");
    const stream = await viaB().chat.completions.create({ model: "stories", messages: [{ role: "user", content: long }], stream: true, stream_options: { include_usage: true } });
    let text = "";
    let usage: unknown;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? "";
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text).toBe(long);
    expect(usage).toMatchObject({ completion_tokens: 200 });
  });

  it("gives the overview on either relay with the load of the machine linked to the other", async () => {
    const overviewOn = async (relay: Relay) => {
      const res = await fetch(`${relay.adminUrl}/admin/v1/overview?org=${gw.orgId}`, { headers: { authorization: `Bearer ${gw.relay.adminToken}` } });
      expect(res.status).toBe(200);
      return (await res.json()) as Overview;
    };
    // The agent's first sample went to A as its link came online; B asks A for it.
    await vi.waitFor(async () => expect((await overviewOn(gw.relay)).loads).toHaveLength(1), { timeout: 10_000, interval: 100 });
    const [onA, onB] = [await overviewOn(gw.relay), await overviewOn(b)];
    expect(onB.machines).toEqual(onA.machines);
    expect(onB.loads).toEqual([expect.objectContaining({ machine_id: gw.machineId, memory_total_bytes: onA.loads[0]!.memory_total_bytes })]);
    expect(onB.loads[0]!.memory_used_bytes).toBeGreaterThan(0);
  });

  it("asks the machine linked to the other relay whether it has a model named by its path, for the Forge on either", async () => {
    const panelOn = async (relay: Relay, model: string) => {
      const res = await fetch(`${relay.adminUrl}/admin/v1/compatibility`, {
        method: "POST",
        headers: { authorization: `Bearer ${gw.relay.adminToken}`, "content-type": "application/json" },
        body: JSON.stringify({ org: gw.orgId, machine: gw.machineId, runtime: "gguf", model }),
      });
      return (await res.json()) as Compatibility;
    };
    const missing = join(bDir, `gone-${via}.gguf`);
    const refused = await panelOn(b, missing);
    expect([refused.ok, refused.checks.filter((c) => c.level === "fail").map((c) => [c.param, c.message])]).toEqual([false, [["model", `There is no file at ${missing} on this machine.`]]]);
    // The file that is there: its header read on the machine, its facts relayed.
    const found = await panelOn(b, testModelPath());
    expect(found.ok).toBe(true);
    expect(found.checks.find((c) => c.topic === "memory")!.message).toContain("KV cache for 2 × 2,048 tokens");
  });

  it("reads the log of the machine linked to the other relay, and of its stack, through that relay", async () => {
    const read = async (relay: Relay, path: string) => {
      const res = await fetch(`${relay.adminUrl}/admin/v1${path}`, { headers: { authorization: `Bearer ${gw.relay.adminToken}` } });
      expect(res.status, await res.clone().text()).toBe(200);
      return (await res.json()) as LogPage;
    };
    const there = await read(b, `/machines/${gw.machineId}/log?limit=5`);
    const here = await read(gw.relay, `/machines/${gw.machineId}/log?limit=5`);
    expect(there.lines.length).toBeGreaterThan(0);
    expect(there.lines).toEqual(here.lines);
    expect((await read(b, `/stacks/${gw.stackId}/log`)).lines.some((l) => l.text.includes("endpoint configured"))).toBe(true);
  });

  it("answers the machine's errors as a local link would", async () => {
    const failed = await chat(b, "fail context_length_exceeded");
    expect(failed.status).toBe(400);
    expect(((await failed.json()) as { error: { code: string } }).error.code).toBe("context_length_exceeded");
    const busy = await chat(b, "fail runtime_unavailable");
    expect(busy.status).toBe(503);
    expect(busy.headers.get("retry-after")).toBe("2");
  });

  it.runIf(via === "direct")("carries a request larger than NATS takes straight to the other relay", async () => {
    const huge = "word ".repeat(300_000);
    const served = await chat(b, huge, { max_tokens: 1 });
    expect(served.status).toBe(200);
  });

  it.runIf(via === "nats")("refuses at once, with 413, a request too large for NATS to carry to the other relay", async () => {
    const huge = "word ".repeat(300_000);
    const refused = await chat(b, huge);
    expect(refused.status).toBe(413);
    expect(((await refused.json()) as { error: { code: string; message: string } }).error).toMatchObject({ code: "request_too_large", message: expect.stringMatching(/NATS takes at most \d+ bytes/) });
    // Served where the machine is linked.
    expect((await chat(gw.relay, huge, { max_tokens: 1 })).status).toBe(200);
  });

  it("does not start when the port for the other relays' direct connections is taken, naming --peer-address, and leaves NATS and the database closed", async () => {
    const dir = mkdtempSync(join(tmpdir(), "makina-relay-c-"));
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
    const port = (taken.address() as { port: number }).port;
    try {
      const flags = { dataDir: dir, database: gw.relay.config.database, secretsKeyFile: join(gw.dataDir, "secrets.key"), nats: nats.url, peerAddress: `127.0.0.1:${port}`, port: 0, grpcPort: 0, grpcHost: "127.0.0.1" };
      await expect(startRelay(resolveRelayConfig({ flags }), { log: silentLogger() })).rejects.toThrow(
        `The relay could not start: the other relays (NATS): cannot listen for the other relays' direct connections on 127.0.0.1:${port}: it is already in use by another program; change it with --peer-address or MAKINA_PEER_ADDRESS.`,
      );
      // Nothing of it is left: its data directory's lock is released (and the leak check after this file finds no
      // socket of its NATS connection or its database's pool).
      expect(existsSync(join(dir, "relay.lock"))).toBe(false);
    } finally {
      await new Promise<void>((resolve) => taken.close(() => resolve()));
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it.runIf(via === "nats")("does not join the others without the secrets key the database names, saying how to give it, and never with another key", async () => {
    const dir = mkdtempSync(join(tmpdir(), "makina-relay-c-"));
    const wrong = join(dir, "wrong.key");
    writeFileSync(wrong, SecretsKey.generate().text());
    const id = readSecretsKeyFile(join(gw.dataDir, "secrets.key")).id;
    try {
      const flags = { dataDir: join(dir, "data"), database: gw.relay.config.database, nats: nats.url, port: 0, grpcPort: 0, grpcHost: "127.0.0.1", peerAddress: "off" };
      await expect(startRelay(resolveRelayConfig({ flags }), { log: silentLogger() })).rejects.toThrow(
        `The relay could not start: the relays' shared secret: the secrets in this database are sealed with the secrets key ${id}, which this relay was not given: copy the key file of the relay that made it (its data directory's secrets.key) and give it with --secrets-key-file or MAKINA_SECRETS_KEY_FILE, or MAKINA_SECRETS_KEY.`,
      );
      await expect(startRelay(resolveRelayConfig({ flags: { ...flags, secretsKeyFile: wrong } }), { log: silentLogger() })).rejects.toThrow(
        new RegExp(`^The relay could not start: the secrets key: the secrets in this database are sealed with the secrets key ${id}, and this relay was given another \\([0-9a-f]{12}, ${wrong}\\)`),
      );
      // Neither made a key of its own, nor left its data directory locked.
      expect(existsSync(join(dir, "data", "secrets.key"))).toBe(false);
      expect(existsSync(join(dir, "data", "relay.lock"))).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("does not start without NATS, saying so", async () => {
    const dir = mkdtempSync(join(tmpdir(), "makina-relay-c-"));
    try {
      const flags = { dataDir: dir, database: gw.relay.config.database, secretsKeyFile: join(gw.dataDir, "secrets.key"), nats: "nats://127.0.0.1:9", port: 0, grpcPort: 0, grpcHost: "127.0.0.1" };
      await expect(startRelay(resolveRelayConfig({ flags }), { log: silentLogger() })).rejects.toThrow(/^The relay could not start: the other relays \(NATS\): .*; change it with --nats or MAKINA_NATS_URL\.$/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it.runIf(via === "nats")("joins a NATS server that lets in only holders of a credentials file (--nats-creds), and does not start without it, saying so", async () => {
    const locked = await startNatsRequiringCredentials();
    const dir = mkdtempSync(join(tmpdir(), "makina-relay-c-"));
    try {
      const flags = { dataDir: dir, database: gw.relay.config.database, secretsKeyFile: join(gw.dataDir, "secrets.key"), nats: locked.url, port: 0, grpcPort: 0, grpcHost: "127.0.0.1", peerAddress: "off" };
      await expect(startRelay(resolveRelayConfig({ flags }), { log: silentLogger() })).rejects.toThrow(/^The relay could not start: the other relays \(NATS\): .*; change it with --nats or MAKINA_NATS_URL\.$/);
      const c = await startRelay(resolveRelayConfig({ flags: { ...flags, natsCreds: locked.credsFile } }), { log: silentLogger() });
      try {
        expect(await (await fetch(`${c.url}/health`)).json()).toEqual({ status: "ok" });
      } finally {
        await c.stop();
      }
    } finally {
      await locked.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("cancels the generation on the machine when the client goes away", async () => {
    const fake = gw.fake(gw.machineId, "stories");
    const res = await chat(b, "stall one two three", { stream: true });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    await reader.read();
    await vi.waitFor(() => expect(fake.active).toBe(1), { timeout: 5000, interval: 20 });
    await reader.cancel();
    await vi.waitFor(() => expect(fake.active).toBe(0), { timeout: 5000, interval: 20 });
  });

  it("gives the live events of one relay (here: a key made) to the web application's streams on the other", async () => {
    const seen: unknown[] = [];
    const unsubscribe = b.events.subscribe((event) => seen.push(event));
    try {
      const { record } = await gw.relay.control.keys.create(OP, gw.orgId, { name: "seen-elsewhere" });
      await vi.waitFor(() => expect(seen).toContainEqual({ type: "key", orgId: gw.orgId, keyId: record.id }), { timeout: 5000, interval: 20 });
    } finally {
      unsubscribe();
    }
  });

  it("deploys and undeploys, through the other relay, a stack whose machine is linked to this one", async () => {
    const admin = (method: string, path: string) => fetch(`${b.adminUrl}/admin/v1${path}`, { method, headers: { authorization: `Bearer ${gw.relay.adminToken}` } });
    const stack = await gw.relay.control.stacks.create(OP, { org: gw.orgId, name: "third", machine: gw.machineId, runtime: "openai", model: "http://fake.invalid/v1#fake", modelId: "third" });
    expect((await admin("POST", `/stacks/${stack.id}/deploy`)).status).toBe(200);
    // Run by relay A, which holds the link: deployed, loaded on the machine, served through B.
    await vi.waitFor(async () => expect(((await (await admin("GET", `/stacks/${stack.id}`)).json()) as { state: string }).state).toBe("deployed"), { timeout: 10_000, interval: 50 });
    expect(gw.agent.host.list().map((r) => r.stackId)).toContain(stack.id);
    // Ready for B's routing once A announces its machine's ready stacks again (looked at every 200 ms).
    const third = () =>
      fetch(`${b.url}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${gw.apiKey}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "third", messages: [{ role: "user", content: "third one" }] }),
      });
    await vi.waitFor(async () => expect((await third()).status).toBe(200), { timeout: 5000, interval: 50 });
    // Undeployed through B: out of service, and its runtime removed from the machine by A, before B answers.
    const undeployed = await admin("POST", `/stacks/${stack.id}/undeploy`);
    expect([undeployed.status, ((await undeployed.json()) as { state: string }).state]).toEqual([200, "draft"]);
    expect(gw.agent.host.list().map((r) => r.stackId)).not.toContain(stack.id);
  });

  it("loads an on-demand model on the machine linked to the other relay, for a request on this one", async () => {
    const stack = await gw.relay.control.stacks.create(OP, { org: gw.orgId, name: `tale-${via}`, machine: gw.machineId, runtime: "gguf", model: testModelPath(), modelId: `tale-${via}`, residency: "on_demand" });
    await gw.relay.control.stacks.deploy(OP, stack.id);
    await gw.relay.deployer.settled(stack.id);
    const state = () => gw.agent.host.list().find((h) => h.stackId === stack.id)?.state;
    expect(state()).toBe("unloaded");
    const tale = () =>
      fetch(`${b.url}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${gw.apiKey}`, "content-type": "application/json" },
        body: JSON.stringify({ model: `tale-${via}`, messages: [{ role: "user", content: "Once upon a time" }], max_tokens: 3 }),
      });
    // B routes to it once A has announced it (unloaded, so B sends the request, and the machine loads the model for it).
    await vi.waitFor(async () => expect((await tale()).status).toBe(200), { timeout: 10_000, interval: 100 });
    expect(state()).toBe("ready");
    // An admin on B unloads it and loads it again, through A.
    const admin = (action: string) => fetch(`${b.adminUrl}/admin/v1/stacks/${stack.id}/${action}`, { method: "POST", headers: { authorization: `Bearer ${gw.relay.adminToken}` } });
    expect((await admin("unload")).status).toBe(200);
    expect(state()).toBe("unloaded");
    expect((await admin("load")).status).toBe(200);
    expect(state()).toBe("ready");
    await gw.relay.control.stacks.undeploy(OP, stack.id);
  });

  // The relays' ids, as each labels its /metrics.
  const relayIds = async () => {
    const relayOf = async (relay: Relay) => /[{,]relay="(rly_[A-Za-z0-9]+)"/.exec((await scrape(relay)).join("\n"))![1]!;
    return [await relayOf(gw.relay), await relayOf(b)] as const;
  };
  const dropped = async (relay: Relay) =>
    Object.fromEntries((await scrape(relay)).filter((l) => l.startsWith("makina_bus_messages_dropped_total")).map((l) => [/reason="(\w+)"/.exec(l)![1], Number(l.slice(l.lastIndexOf(" ") + 1))]));
  // A relay of this deployment, as far as the bus can tell: it holds the relays' shared secret (read from the
  // database, where it is sealed, with the secrets key).
  const insider = async (as: string) =>
    new BusSeal(readSecretsKeyFile(join(gw.dataDir, "secrets.key")).open("peer_secret", (await gw.relay.store.settings.get("peer_secret"))!), as);
  const encode = (m: unknown) => new TextEncoder().encode(JSON.stringify(m));

  it("sends a model's requests, from either relay, to the replica whose model is loaded, on a machine linked to either", async () => {
    // A second machine, linked to B; a replica of one model on each machine, both on demand.
    const { machine, token } = await gw.relay.control.machines.create(OP, { org: gw.orgId, name: `b-machine-${via}` });
    const agentB = await startAgent(
      resolveAgentConfig({
        flags: { server: b.linkAddress, machineId: machine.id, token, dataDir: join(bDir, "agent"), threads: 1, gpu: false, maxContextSize: 512, reconnectMinMs: 50, reconnectMaxMs: 500, drainTimeoutMs: 1000, ...(b.linkCaSha256 ? { caSha256: b.linkCaSha256 } : {}) },
      }),
      { log: silentLogger() },
    );
    const { connect } = await import("@nats-io/transport-node");
    const watch = await connect({ servers: nats.url });
    try {
      await agentB.link.whenOnline();
      const modelId = `twin-${via}`;
      const replica = async (relay: Relay, machineId: string, name: string) => {
        const made = await relay.control.stacks.create(OP, { org: gw.orgId, name, machine: machineId, runtime: "gguf", model: testModelPath(), modelId, residency: "on_demand" });
        // Deployed by the relay holding its machine's link.
        await relay.control.stacks.deploy(OP, made.id);
        await relay.deployer.settled(made.id);
        return made.id;
      };
      const onA = await replica(gw.relay, gw.machineId, `twin-a-${via}`);
      const onB = await replica(b, machine.id, `twin-b-${via}`);
      const held = () => [gw.agent.host.list().find((h) => h.stackId === onA)?.state, agentB.host.list().find((h) => h.stackId === onB)?.state];
      expect(held()).toEqual(["unloaded", "unloaded"]);

      // Each relay's announcements as another relay hears them (a holder of the relays' key reads them): how many
      // came, and the stacks of each machine its latest one says are unloaded.
      const [idA, idB] = await relayIds();
      const seal = await insider("rly_watch");
      const heard = new Map<string, { n: number; unloaded: Map<string, string[]> }>();
      watch.subscribe("makina.machines", {
        callback: (_e, m) => {
          const opened = seal.open(m.subject, m.data);
          if (typeof opened === "string") return;
          const relay = heard.get(opened.sender) ?? { n: 0, unloaded: new Map<string, string[]>() };
          relay.n++;
          for (const [id, , , , unloaded] of (opened.body as { machines: [string, number, number, string[], string[]?][] }).machines) relay.unloaded.set(id, unloaded ?? []);
          heard.set(opened.sender, relay);
        },
      });
      await watch.flush();
      /** Until a relay has announced a stack loaded or not, and then once more: by then the other relay has had it. */
      const announced = async (relayId: string, machineId: string, stackId: string, loaded: boolean) => {
        const at = await vi.waitFor(
          () => {
            const relay = heard.get(relayId);
            expect(relay?.unloaded.get(machineId)?.includes(stackId)).toBe(!loaded);
            return relay!.n;
          },
          { timeout: 5000, interval: 20 },
        );
        await vi.waitFor(() => expect(heard.get(relayId)!.n).toBeGreaterThan(at), { timeout: 5000, interval: 20 });
      };
      const ask = async (relay: Relay) => {
        const res = await fetch(`${relay.url}/v1/chat/completions`, {
          method: "POST",
          headers: { authorization: `Bearer ${gw.apiKey}`, "content-type": "application/json" },
          body: JSON.stringify({ model: modelId, messages: [{ role: "user", content: "Once upon a time" }], max_tokens: 2 }),
        });
        await res.arrayBuffer();
        return res.status;
      };
      // Four requests on each relay (replicas equal in all else would take them in turn).
      const everyRelay = async () => {
        const statuses: number[] = [];
        for (const relay of [gw.relay, b, gw.relay, b, gw.relay, b, gw.relay, b]) statuses.push(await ask(relay));
        return statuses;
      };

      // Loaded on A's machine: A keeps its requests, and B sends its own there rather than load its machine's replica.
      await gw.relay.control.stacks.setLoaded(OP, onA, true);
      // Its context, said by its runtime as it loaded, is the stack's on either relay.
      await vi.waitFor(async () => expect((await b.control.stacks.get(OP, onA)).contextSize).toBe(gw.agent.host.runtime(onA)!.contextSize), { timeout: 3000, interval: 50 });
      await announced(idA, gw.machineId, onA, true);
      await announced(idB, machine.id, onB, false);
      expect(await everyRelay()).toEqual(new Array(8).fill(200));
      expect(held()).toEqual(["ready", "unloaded"]);

      // The other way round: loaded on B's machine only, every request goes there.
      await gw.relay.control.stacks.setLoaded(OP, onA, false);
      await b.control.stacks.setLoaded(OP, onB, true);
      await announced(idA, gw.machineId, onA, false);
      await announced(idB, machine.id, onB, true);
      expect(await everyRelay()).toEqual(new Array(8).fill(200));
      expect(held()).toEqual(["unloaded", "ready"]);

      await gw.relay.control.stacks.undeploy(OP, onA);
      await b.control.stacks.undeploy(OP, onB);
    } finally {
      await watch.close();
      await agentB.stop();
    }
  });

  it("does not stop a deployed stack because a relay asks on the bus: the database's state decides", async () => {
    const { connect } = await import("@nats-io/transport-node");
    const bus = await connect({ servers: nats.url });
    try {
      // Sealed as a relay would: the relay holding the link answers a stop only for a stack being undeployed.
      const seal = await insider("rly_insider");
      const stop = bus.request("makina.stop", seal.seal("makina.stop", { stack: gw.stackId }), { timeout: 1500 });
      await expect(stop).rejects.toThrow();
      // Still on the machine, and served through either relay.
      expect(gw.agent.host.list().map((r) => r.stackId)).toContain(gw.stackId);
      expect((await chat(gw.relay, "still here?")).status).toBe(200);
      expect((await chat(b, "still here?")).status).toBe(200);
    } finally {
      await bus.close();
    }
  });

  it.runIf(via === "nats")("drops, counts and never acts on what a client on the bus without the relays' key sends, nor on a relay's message sent again or elsewhere; a prompt crossing is never in clear", async () => {
    const { connect } = await import("@nats-io/transport-node");
    const rogue = await connect({ servers: nats.url });
    const [idA, idB] = await relayIds();
    const [beforeA, beforeB] = [await dropped(gw.relay), await dropped(b)];
    const seen: { subject: string; data: Uint8Array }[] = [];
    rogue.subscribe("makina.>", { callback: (_e, m) => void seen.push({ subject: m.subject, data: m.data }) });
    await rogue.flush();
    try {
      // What crosses the bus is sealed: the prompt and its answer are nowhere in clear.
      const secretPrompt = "the launch code is swordfish";
      expect(await (await chat(b, secretPrompt)).json()).toMatchObject({ choices: [{ message: { content: secretPrompt } }] });
      await vi.waitFor(() => expect(seen.some((m) => m.subject === `makina.hop.${idA}`)).toBe(true));
      const text = seen.map((m) => Buffer.from(m.data).toString("latin1")).join("\n");
      expect(text).not.toContain("swordfish");
      expect(text).not.toContain(gw.machineId);

      // Without the key: a request for A's machine as if from B, an announcement of A's machine by a relay that
      // is none, a reply to one of B's requests, a cancel, a stop, a look at a file.
      const answers: string[] = [];
      // The answers to the two requests below, if any came.
      for (const n of [900_001, 900_002]) rogue.subscribe(`makina.reply.${idB}.${n}`, { callback: (_e, m) => void answers.push(m.subject) });
      rogue.publish(`makina.hop.${idA}`, encode({ from: idB, n: 900_001, machine: gw.machineId, stack: gw.stackId, input: { messages: [{ role: "user", content: "free tokens" }] }, firstTokenTimeoutMs: 1000, steps: 1, credit: 32 }));
      rogue.publish("makina.machines", encode({ relay: "rly_rogue", machines: [[gw.machineId, 0, 0, [gw.stackId]]] }));
      rogue.publish(`makina.reply.${idB}.1`, encode({ s: 0, e: { type: "token", text: "forged" } }));
      rogue.publish(`makina.hop.${idA}.ctl`, encode({ from: idB, n: 1, cancel: true }));
      await expect(rogue.request("makina.stop", encode({ stack: gw.stackId }), { timeout: 500 })).rejects.toThrow();
      await expect(rogue.request(`makina.model-files.${idA}`, encode({ machine: gw.machineId, ref: "/etc/shadow", runtime: "gguf" }), { timeout: 500 })).rejects.toThrow();

      // A relay's genuine message sent again (the request B sent A above), and sent to B instead of A.
      const genuine = seen.find((m) => m.subject === `makina.hop.${idA}`)!;
      rogue.publish(genuine.subject, genuine.data);
      rogue.publish(`makina.hop.${idB}`, genuine.data);

      // A holder of the key whose messages say they come from another relay than their seal does: an announcement
      // of A's machines, a request as if from B. (Sealed in B's name, they would be taken: the key is shared.)
      const seal = await insider("rly_insider");
      rogue.publish("makina.machines", seal.seal("makina.machines", { relay: idA, machines: [] }));
      rogue.publish(`makina.hop.${idA}`, seal.seal(`makina.hop.${idA}`, { from: idB, n: 900_002, machine: gw.machineId, stack: gw.stackId, input: { messages: [{ role: "user", content: "hi" }] }, firstTokenTimeoutMs: 1000, steps: 1, credit: 32 }));

      // Junk answered first to B's question of A (the inbox's name crosses in clear): dropped, A's answer taken.
      rogue.subscribe(`makina.model-files.${idA}`, { callback: (_e, m) => void m.respond(encode({ refused: { code: "not_found", message: "forged" } })) });
      await rogue.flush();
      const missing = join(bDir, "gone-rogue.gguf");
      const panel = await fetch(`${b.adminUrl}/admin/v1/compatibility`, {
        method: "POST",
        headers: { authorization: `Bearer ${gw.relay.adminToken}`, "content-type": "application/json" },
        body: JSON.stringify({ org: gw.orgId, machine: gw.machineId, runtime: "gguf", model: missing }),
      });
      expect(((await panel.json()) as Compatibility).checks.filter((c) => c.level === "fail").map((c) => c.message)).toEqual([`There is no file at ${missing} on this machine.`]);

      // A: the request, the announcement, the cancel, the stop and the file look unauthenticated; the request
      // sent again replayed; the insider's two impersonating. B: the announcement, the reply, the stop (and the junk answer); the
      // request misaddressed; the insider's announcement impersonating.
      const delta = (after: Record<string, number>, before: Record<string, number>) => Object.fromEntries(Object.entries(after).map(([k, v]) => [k, v - (before[k] ?? 0)]));
      await vi.waitFor(async () => expect(delta(await dropped(gw.relay), beforeA)).toEqual({ unauthenticated: 5, misaddressed: 0, stale: 0, replayed: 1, impersonating: 2 }), { timeout: 5000, interval: 100 });
      await vi.waitFor(async () => expect(delta(await dropped(b), beforeB)).toMatchObject({ misaddressed: 1, stale: 0, replayed: 0, impersonating: 1 }), { timeout: 5000, interval: 100 });
      // The junk answer is counted when it came before A's (almost always: A asks its machine first); after it,
      // nobody waits on the inbox any more.
      expect([3, 4]).toContain(delta(await dropped(b), beforeB).unauthenticated);
      // Nothing was served for them: no answer to either request, no relay but A known to B,
      // and A's machine still served through B.
      expect(answers).toEqual([]);
      expect(await otherRelays(b)).toEqual([expect.stringContaining(`other_relay="${idA}"`)]);
      expect(gw.agent.host.list().map((r) => r.stackId)).toContain(gw.stackId);
      expect((await chat(b, "still here?")).status).toBe(200);
    } finally {
      await rogue.close();
    }
  });

  it("labels every series of each relay's /metrics with the relay's id, and says how it reaches the other", async () => {
    const [ofA, ofB] = [await scrape(gw.relay), await scrape(b)];
    const relayOf = (lines: string[]) => new Set(lines.map((l) => /[{,]relay="(rly_[A-Za-z0-9]+)"/.exec(l)?.[1]));
    expect(relayOf(ofA).size).toBe(1);
    expect(relayOf(ofB).size).toBe(1);
    const [idA, idB] = [[...relayOf(ofA)][0], [...relayOf(ofB)][0]];
    expect(idA).toEqual(expect.stringMatching(/^rly_/));
    expect(idA).not.toBe(idB);
    // B's requests for A's machine go the way this suite set up; A dials B only when B takes direct connections.
    expect(await otherRelays(b)).toEqual([`makina_other_relays{other_relay="${idA}",via="${via}",relay="${idB}"} 1`]);
    expect(await otherRelays(gw.relay)).toEqual([`makina_other_relays{other_relay="${idB}",via="${via}",relay="${idA}"} 1`]);
  });

  it("refuses with 503 and Retry-After while NATS is down, ends streams in flight as incomplete, keeps local requests, and recovers by itself", async () => {
    const streaming = await chat(b, "slow 100 a b c d e f g h i j k l m n o p q r s t", { stream: true });
    expect(streaming.status).toBe(200);
    const body = streaming.text();
    await nats.stop();
    // The stream through B ends with the error event of an incomplete stream, never [DONE].
    const text = await body;
    expect(text).toContain('"code":"stream_incomplete"');
    expect(text).not.toContain("[DONE]");

    const refused = await chat(b, "hello");
    expect(refused.status).toBe(503);
    expect(refused.headers.get("retry-after")).toEqual(expect.any(String));
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe("machine_offline");
    expect(await (await fetch(`${b.url}/health`)).json()).toMatchObject({ status: "degraded", nats: expect.any(String) });
    // Relay A serves its own machine as before.
    expect((await chat(gw.relay, "hello")).status).toBe(200);

    await nats.start();
    await vi.waitFor(async () => expect((await chat(b, "hello again")).status).toBe(200), { timeout: 15_000, interval: 200 });
    expect(await (await fetch(`${b.url}/health`)).json()).toEqual({ status: "ok" });
  });
});
