import { createHmac } from "node:crypto";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { silentLogger } from "../../proto/index.js";
import { AlertSender, postWebhook } from "../../relay/alerts/index.js";
import { relayPaths } from "../../relay/index.js";
import { openStore } from "../../relay/store/index.js";
import { startTestGateway, type TestGateway } from "../helpers/test-gateway.js";
import { adminApi } from "../helpers/admin-api.js";

/** A webhook receiver on loopback: what it got, and what it answers next (200 unless told). */
class Receiver {
  readonly got: { headers: IncomingMessage["headers"]; body: string; path: string }[] = [];
  answers: number[] = [];
  private server!: Server;
  url = "";

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      let body = "";
      req.on("data", (c: Buffer) => (body += c.toString()));
      req.on("end", () => {
        this.got.push({ headers: req.headers, body, path: req.url ?? "" });
        const status = this.answers.shift() ?? 200;
        res.writeHead(status, status === 302 ? { location: "http://169.254.169.254/latest/meta-data" } : {}).end("ok");
      });
    });
    await new Promise<void>((r) => this.server.listen(0, "127.0.0.1", r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  of(path: string) {
    return this.got.filter((g) => g.path === path);
  }

  close(): Promise<void> {
    return new Promise((r) => this.server.close(() => r()));
  }
}

/** The Standard Webhooks check, written from the specification: HMAC-SHA256 of `id.timestamp.body` with the secret's bytes. */
function verified(secret: string, headers: IncomingMessage["headers"], body: string): boolean {
  const expected = createHmac("sha256", Buffer.from(secret.replace(/^whsec_/, ""), "base64"))
    .update(`${headers["webhook-id"]}.${headers["webhook-timestamp"]}.${body}`)
    .digest("base64");
  return String(headers["webhook-signature"]).split(" ").includes(`v1,${expected}`);
}

describe("alerts", () => {
  let gw: TestGateway;
  const receiver = new Receiver();
  const admin = adminApi(() => gw.relay);
  type Hook = { id: string; secret: string; url: string; events: string[] };
  type Deliveries = { data: { event_type: string; state: string; attempts: number; last_status: number | null; last_error: string | null }[]; total: number };

  beforeAll(async () => {
    await receiver.start();
    // Private receivers allowed (a receiver on loopback), a first retry after 100 ms, and a look for events every 200 ms.
    gw = await startTestGateway({ runtime: "fake", relayFlags: { alertsAllowPrivate: true, alertsFirstRetryMs: 100, alertsCheckMs: 200 } });
  });
  afterAll(async () => {
    await gw?.close();
    await receiver.close();
  });

  it("signs each delivery as Standard Webhooks say, with a text Slack shows, and tries again after a 500", async () => {
    const made = await admin<Hook>("POST", "/alerts", { org: gw.orgId, name: "ops", url: `${receiver.url}/ops`, events: ["runtime.failed"] });
    expect(made.status).toBe(201);
    expect(made.body.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    // The secret is answered once: never in the list.
    expect(JSON.stringify((await admin("GET", `/alerts?org=${gw.orgId}`)).body)).not.toContain(made.body.secret);
    receiver.answers.push(500);
    expect((await admin("POST", `/alerts/${made.body.id}/test`)).status).toBe(200);
    await vi.waitFor(() => expect(receiver.of("/ops")).toHaveLength(2), { timeout: 10_000 });
    const [first, second] = receiver.of("/ops");
    // The same message both times: one id, one body, each try signed anew.
    expect(second!.headers["webhook-id"]).toBe(first!.headers["webhook-id"]);
    expect(second!.body).toBe(first!.body);
    for (const g of [first!, second!]) expect(verified(made.body.secret, g.headers, g.body)).toBe(true);
    expect(verified("whsec_" + Buffer.alloc(32).toString("base64"), second!.headers, second!.body)).toBe(false);
    const body = JSON.parse(second!.body) as { type: string; text: string; data: unknown };
    expect(body).toMatchObject({ type: "alert.test", text: expect.stringContaining("Alerts reach you here") });
    await vi.waitFor(async () => {
      const deliveries = (await admin<Deliveries>("GET", `/alerts/${made.body.id}/deliveries`)).body;
      expect(deliveries.data[0]).toMatchObject({ event_type: "alert.test", state: "delivered", attempts: 2, last_status: 200 });
    });
  });

  it("tells a machine offline past its grace once, a budget past 80% and 100% once each, and a key about to expire", async () => {
    const hook = (await admin<Hook>("POST", "/alerts", { org: gw.orgId, url: `${receiver.url}/fleet`, events: ["machine.offline", "budget.threshold", "key.expiring"], machine_offline_after_s: 5 })).body;
    const key = (await admin<{ id: string; key: string }>("POST", "/keys", { org: gw.orgId, name: "intern", budget: { tokens: 1000, period: "day" } })).body;
    const chat = () =>
      fetch(`${gw.baseURL}/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${key.key}`, "content-type": "application/json" },
        body: JSON.stringify({ model: gw.modelId, messages: [{ role: "user", content: "Once upon a time" }], max_tokens: 20 }),
      });
    // Spend the budget: 80%, then all of it.
    while ((await chat()).status === 200);
    await vi.waitFor(() => expect(receiver.of("/fleet").map((g) => (JSON.parse(g.body) as { data: { percent: number } }).data.percent).sort()).toEqual([100, 80]), { timeout: 10_000 });
    const second = await gw.addMachine(gw.orgId);
    await second.agent.stop();
    const offline = () => receiver.of("/fleet").filter((g) => (JSON.parse(g.body) as { type: string }).type === "machine.offline");
    await vi.waitFor(() => expect(offline()).toHaveLength(1), { timeout: 20_000, interval: 200 });
    expect(JSON.parse(offline()[0]!.body)).toMatchObject({ data: { machine_id: second.machineId }, text: expect.stringMatching(/^Makina: machine .* has been offline since /) });
    // A key that expires within the day: told by a later look, which found the machine offline again and queued
    // nothing for it (one event, one delivery, whichever look or relay sees it).
    const expiring = (await admin<{ id: string }>("POST", "/keys", { org: gw.orgId, name: "leaving", expires_at: Date.now() + 3_600_000 })).body;
    const told = () => receiver.of("/fleet").map((g) => JSON.parse(g.body) as { type: string; data: { key_id?: string } });
    await vi.waitFor(() => expect(told().filter((e) => e.type === "key.expiring").map((e) => e.data.key_id)).toEqual([expiring.id]), { timeout: 20_000, interval: 200 });
    const deliveries = (await admin<Deliveries>("GET", `/alerts/${hook.id}/deliveries`)).body.data;
    expect(deliveries.map((d) => d.event_type).sort()).toEqual(["budget.threshold", "budget.threshold", "key.expiring", "machine.offline"]);
    expect(offline()).toHaveLength(1);
    await admin("DELETE", `/alerts/${hook.id}`);
  });

  it("queues an event seen by two relays once, and sends it once", async () => {
    const hook = (await admin<Hook>("POST", "/alerts", { org: gw.orgId, url: `${receiver.url}/twice`, events: ["error_rate"] })).body;
    const secrets = { make: async () => hook.secret, read: async () => hook.secret, forget: async () => undefined };
    // A second sender on the same database (its own connection to the relay's file) stands for a second relay;
    // the relay itself sends what is due too.
    const store = await openStore({ kind: "sqlite", file: relayPaths(gw.dataDir).database });
    const other = new AlertSender({ store: store.alerts, secrets, log: silentLogger(), reach: { allowPrivate: true }, firstRetryMs: 100 });
    const event = { id: "error_rate:test:1", type: "error_rate" as const, orgId: gw.orgId, data: {}, text: "too many errors" };
    const queued = await Promise.all([other.emit(event), other.emit(event), other.emit(event)]);
    expect(queued.reduce((a, b) => a + b, 0)).toBe(1);
    other.start(50);
    // Both senders look for it (the relay's and this one): the one that leased it delivered it, once, in one try.
    await vi.waitFor(async () => expect((await admin<Deliveries>("GET", `/alerts/${hook.id}/deliveries`)).body.data).toMatchObject([{ state: "delivered", attempts: 1 }]), { timeout: 10_000 });
    await other.stop();
    await store.close();
    expect(receiver.of("/twice")).toHaveLength(1);
  });

  it("refuses private and plain-http URLs unless the operator allows them, and never follows a redirect", async () => {
    const strict = { allowPrivate: false, resolve: async () => ["127.0.0.1"] };
    await expect(postWebhook(`${receiver.url}/x`, "{}", {}, strict, 1000)).rejects.toThrow(/must be an https URL/);
    await expect(postWebhook("https://127.0.0.1/x", "{}", {}, strict, 1000)).rejects.toThrow(/names 127\.0\.0\.1, which is not a public address/);
    // A public-looking name that resolves to a private address is refused as the connection is made.
    await expect(postWebhook("https://hooks.example.com/x", "{}", {}, strict, 1000)).rejects.toThrow(/hooks\.example\.com resolves to 127\.0\.0\.1, not a public address/);
    const strictRelay = await startTestGateway({ runtime: "fake" });
    try {
      const res = await fetch(`${strictRelay.relay.adminUrl}/admin/v1/alerts`, {
        method: "POST",
        headers: { authorization: `Bearer ${strictRelay.relay.adminToken}`, "content-type": "application/json" },
        body: JSON.stringify({ org: strictRelay.orgId, url: "https://10.0.0.5/hook", events: ["machine.offline"] }),
      });
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: { param: string; message: string } }).error).toMatchObject({ param: "url", message: expect.stringContaining("not a public address") });
    } finally {
      await strictRelay.close();
    }
    // A redirect is a failed try, not followed.
    const hook = (await admin<Hook>("POST", "/alerts", { org: gw.orgId, url: `${receiver.url}/moved`, events: ["runtime.failed"] })).body;
    receiver.answers.push(302, 302, 302, 302, 302, 302, 302, 302);
    await admin("POST", `/alerts/${hook.id}/test`);
    await vi.waitFor(async () => expect((await admin<Deliveries>("GET", `/alerts/${hook.id}/deliveries`)).body.data[0]).toMatchObject({ last_status: 302, last_error: "answered 302: redirects are not followed" }));
    expect(receiver.got.filter((g) => g.path.startsWith("/latest"))).toHaveLength(0);
    receiver.answers.length = 0;
  });
});
