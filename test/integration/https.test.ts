import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { request } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../proto/index.js";
import { resolveRelayConfig } from "../../relay/index.js";
import { startRelay } from "../../relay/start/start-relay.js";
import { operatorCertificates, type OperatorCertificates } from "../helpers/certificates.js";
import { startTestGateway, type TestGateway } from "../helpers/test-gateway.js";
import { OP } from "../helpers/operator.js";

/** One HTTPS request trusting `ca`; resolves the status, headers and body. */
function httpsRequest(url: string, ca: Buffer, options: { method?: string; headers?: Record<string, string>; body?: string } = {}) {
  return new Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }>((resolve, reject) => {
    const req = request(url, { method: options.method ?? "GET", headers: options.headers, ca }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => (body += c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on("error", reject);
    req.end(options.body);
  });
}

describe("the relay's HTTP side over HTTPS, and behind a reverse proxy", () => {
  let gw: TestGateway;
  let proxied: TestGateway;
  let certs: OperatorCertificates;
  let ca: Buffer;

  beforeAll(async () => {
    certs = operatorCertificates(["relay.example"]);
    ca = readFileSync(certs.ca);
    gw = await startTestGateway({ relayFlags: { tlsCert: certs.cert, tlsKey: certs.key }, runtime: "fake" });
    proxied = await startTestGateway({ relayFlags: { trustProxy: true }, runtime: "fake" });
  });
  afterAll(async () => {
    await gw?.close();
    await proxied?.close();
    rmSync(certs.dir, { recursive: true, force: true });
  });

  it("serves the gateway over HTTPS with the certificate it was given", async () => {
    expect(gw.relay.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const res = await httpsRequest(`${gw.baseURL}/chat/completions`, ca, {
      method: "POST",
      headers: { authorization: `Bearer ${gw.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ model: gw.modelId, messages: [{ role: "user", content: "private words" }] }),
    });
    expect(res.status).toBe(200);
    expect((JSON.parse(res.body) as { choices: { message: { content: string } }[] }).choices[0]!.message.content).toBe("private words");
  });

  it("marks the session cookie Secure when signed in over HTTPS", async () => {
    await gw.relay.control.users.create(OP, { org: gw.orgId,  login: "ada", password: "a long enough password", role: "admin" });
    const res = await httpsRequest(`${gw.relay.url}/auth/v1/sign-in`, ca, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ login: "ada", password: "a long enough password" }),
    });
    expect(res.status).toBe(200);
    expect(String(res.headers["set-cookie"])).toMatch(/HttpOnly/);
    expect(String(res.headers["set-cookie"])).toMatch(/Secure/);
    // Only this host, over HTTPS, may set it; and browsers are told to come back over HTTPS only.
    expect(String(res.headers["set-cookie"])).toMatch(/^__Host-makina_session=/);
    // HSTS for a name, not for an address (nor localhost, whose every port it would hold to HTTPS).
    expect(res.headers["strict-transport-security"]).toBeUndefined();
    const named = await httpsRequest(`${gw.relay.url}/auth/v1/session`, ca, { headers: { host: "relay.example" } });
    expect(named.headers["strict-transport-security"]).toBe("max-age=31536000");
    const cookie = String(res.headers["set-cookie"]).split(";")[0]!;
    expect((await httpsRequest(`${gw.relay.url}/auth/v1/session`, ca, { headers: { cookie } })).status).toBe(200);
  });

  it("behind a proxy it trusts, throttles failed sign-ins by the client's forwarded address, not the proxy's", async () => {
    const signIn = (address: string, i: number) =>
      fetch(`${proxied.relay.url}/auth/v1/sign-in`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-forwarded-for": address },
        body: JSON.stringify({ login: `nobody-${i}`, password: "wrong password here" }),
      });
    let throttled = 0;
    for (let i = 0; i < 40; i++) if ((await signIn("203.0.113.7", i)).status === 429) throttled++;
    expect(throttled).toBeGreaterThan(0);
    const other = await signIn("198.51.100.9", 1000);
    expect(other.status).toBe(401);
  });
});

describe("an admin listener beyond loopback without TLS", () => {
  const started = async (flags: Record<string, unknown>) => {
    const dataDir = mkdtempSync(join(tmpdir(), "makina-plain-"));
    const lines: string[] = [];
    const relay = await startRelay(resolveRelayConfig({ flags: { dataDir, port: 0, grpcPort: 0, grpcHost: "127.0.0.1", ...flags } }), { log: createLogger({ write: (l) => lines.push(l) }) });
    await relay.stop();
    rmSync(dataDir, { recursive: true, force: true });
    return lines.filter((l) => l.includes("without TLS")).map((l) => (JSON.parse(l) as { level: string; host: string }));
  };

  it("is warned about at start: passwords and the admin token would cross the network in the clear", async () => {
    expect(await started({ host: "0.0.0.0", adminPort: "shared" })).toEqual([expect.objectContaining({ level: "warn", host: "0.0.0.0" })]);
    expect(await started({ adminHost: "0.0.0.0", adminPort: 0 })).toEqual([expect.objectContaining({ level: "warn", host: "0.0.0.0" })]);
    // A public gateway keeps its admin listener on loopback; on loopback, or behind a TLS proxy it trusts, there is nothing to say.
    expect(await started({ host: "0.0.0.0", adminPort: 0 })).toEqual([]);
    expect(await started({})).toEqual([]);
    expect(await started({ host: "0.0.0.0", adminPort: "shared", trustProxy: true })).toEqual([]);
  });
});
