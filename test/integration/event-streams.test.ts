import { mkdtempSync, rmSync, statSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { resolveRelayConfig } from "../../relay/index.js";
import { startRelay, type RelayInternals as Relay } from "../../relay/start/start-relay.js";
import { hashPassword, hashSecret } from "../../relay/keys/index.js";
import { silentLogger } from "../../proto/index.js";
import { WebClient } from "../helpers/web-client.js";
import { OP } from "../helpers/operator.js";

// The web application's live event stream, bounded: per session, for clients that do not read, and for
// sessions that end while it is open. (Keepalives every 200 ms here, every 15 s by default.)
describe("live event streams", () => {
  let relay: Relay;
  let dataDir: string;
  let orgId: string;
  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), "makina-events-"));
    relay = await startRelay(resolveRelayConfig({ flags: { dataDir, port: 0, grpcPort: 0, grpcHost: "127.0.0.1", eventsKeepaliveMs: 200 } }), { log: silentLogger() });
    orgId = (await relay.control.orgs.create(OP, { name: "Streams" })).id;
    await relay.store.users.create({ orgId, login: "viewer", passwordHash: await hashPassword("a long enough password"), role: "member" });
  });
  afterAll(async () => {
    await relay?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const signedIn = async () => {
    const c = new WebClient(relay.url);
    expect((await c.signIn("viewer", "a long enough password")).status).toBe(200);
    return c;
  };
  const open = (c: WebClient) => fetch(`${relay.url}/admin/v1/events`, { headers: { cookie: c.cookie } });
  /** Reads a stream to its end; resolves with what it carried. */
  const untilEnd = async (res: Response) => {
    const reader = res.body!.getReader();
    let text = "";
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return text;
      text += new TextDecoder().decode(value);
    }
  };

  it("answers 404 to a user naming another organization, as every admin route does", async () => {
    const other = await relay.control.orgs.create(OP, { name: "Someone Else" });
    const c = await signedIn();
    const theirs = await fetch(`${relay.url}/admin/v1/events?org=${other.slug}`, { headers: { cookie: c.cookie } });
    expect([theirs.status, ((await theirs.json()) as { error: { code: string } }).error.code]).toEqual([404, "not_found"]);
    const own = await fetch(`${relay.url}/admin/v1/events?org=streams`, { headers: { cookie: c.cookie } });
    expect(own.status).toBe(200);
    await own.body!.cancel();
  });

  it("keeps relay.json, which names its addresses, readable by its user only, as its neighbours", () => {
    expect(statSync(join(dataDir, "relay.json")).mode & 0o777).toBe(0o600);
  });

  it("ends a session's stream as soon as it signs out", async () => {
    const c = await signedIn();
    const res = await open(c);
    expect(res.status).toBe(200);
    const ended = untilEnd(res);
    expect((await c.call("POST", "/auth/v1/sign-out")).status).toBe(200);
    expect(await ended).toContain(": makina events");
  });

  it("ends it at the next keepalive once the session is gone elsewhere (another relay, expired)", async () => {
    const c = await signedIn();
    const res = await open(c);
    const ended = untilEnd(res);
    // As another relay on the same database signing the session out would.
    await relay.store.sessions.delete(hashSecret(c.cookie.split("=")[1]!));
    expect(await ended).toContain(": keepalive");
  });

  it("opens at most 8 streams per session; the next gets 429 too_many_streams until one closes", async () => {
    const c = await signedIn();
    const controllers = Array.from({ length: 8 }, () => new AbortController());
    const opened = await Promise.all(controllers.map((ctl) => fetch(`${relay.url}/admin/v1/events`, { headers: { cookie: c.cookie }, signal: ctl.signal })));
    expect(opened.map((r) => r.status)).toEqual(Array(8).fill(200));
    const ninth = await open(c);
    expect(ninth.status).toBe(429);
    expect(((await ninth.json()) as { error: { code: string } }).error.code).toBe("too_many_streams");
    // Another session has streams of its own.
    const other = await open(await signedIn());
    expect(other.status).toBe(200);
    await other.body!.cancel();
    controllers[0]!.abort();
    await expect.poll(async () => {
      const again = await open(c);
      await again.body?.cancel();
      return again.status;
    }).toBe(200);
    for (const ctl of controllers) ctl.abort();
  });

  it("ends the streams a signed-out session's clients do not read, and writes nothing after their end", async () => {
    const c = await signedIn();
    const url = new URL(`${relay.url}/admin/v1/events`);
    const paused = await Promise.all(
      Array.from({ length: 8 }, () => new Promise<import("node:http").IncomingMessage>((resolve, reject) => request({ host: url.hostname, port: url.port, path: url.pathname, headers: { cookie: c.cookie } }, resolve).on("error", reject).end())),
    );
    for (const res of paused) {
      expect(res.statusCode).toBe(200);
      res.pause();
    }
    // More than the sockets take: the ends of these streams cannot be flushed while their clients do not read.
    for (let i = 0; i < 100_000; i++) relay.events.emit({ type: "key", orgId, keyId: `key_${i}` });
    expect((await c.call("POST", "/auth/v1/sign-out")).status).toBe(200);
    // Events keep coming after the end (as keepalives would); the relay writes none of them and stays up.
    for (let i = 0; i < 2_000; i++) relay.events.emit({ type: "key", orgId, keyId: `key_after_${i}` });
    expect((await fetch(`${relay.url}/health`)).status).toBe(200);
    // When the clients read again, their streams are over: they get what the sockets held, then the end.
    const got = await Promise.all(
      paused.map(
        (res) =>
          new Promise<string>((resolve) => {
            let text = "";
            res.on("data", (chunk: Buffer) => (text += chunk.toString()));
            res.on("close", () => resolve(text));
            res.resume();
          }),
      ),
    );
    for (const text of got) {
      expect(text).not.toContain("key_after_");
      expect(text.split("event: key").length - 1).toBeLessThan(100_000);
    }
  });

  it("buffers nothing for a client that does not read: the events it missed are dropped and its stream ends once it reads", async () => {
    const c = await signedIn();
    const url = new URL(`${relay.url}/admin/v1/events`);
    const res = await new Promise<import("node:http").IncomingMessage>((resolve, reject) => request({ host: url.hostname, port: url.port, path: url.pathname, headers: { cookie: c.cookie } }, resolve).on("error", reject).end());
    expect(res.statusCode).toBe(200);
    // The client reads nothing while 100,000 events (about 7 MB) are announced.
    res.pause();
    const sent = 100_000;
    for (let i = 0; i < sent; i++) relay.events.emit({ type: "key", orgId, keyId: `key_${String(i).padStart(12, "0")}` });
    let received = 0;
    res.on("data", (chunk: Buffer) => (received += chunk.toString().split("event: key").length - 1));
    const ended = new Promise<void>((resolve) => res.on("end", resolve));
    res.resume();
    await ended;
    expect(received).toBeGreaterThan(0);
    expect(received).toBeLessThan(sent);
  });
});
