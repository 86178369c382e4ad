import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.js";
import { startTestGateway, type TestGateway } from "../helpers/test-gateway.js";

// The admin API and the web application on a listener of their own, off the gateway's public face.
describe("the admin API on its own listener", () => {
  let gw: TestGateway;
  let admin: Record<string, string>;
  beforeAll(async () => {
    gw = await startTestGateway({ relayFlags: { adminPort: 0 }, runtime: "fake" });
    admin = { authorization: `Bearer ${gw.relay.adminToken}` };
  });
  afterAll(async () => {
    await gw?.close();
  });

  it("serves the gateway on the public listener and nothing of the admin API, sign-in, web application or metrics", async () => {
    expect(gw.relay.adminUrl).not.toBe(gw.relay.url);
    const chat = await fetch(`${gw.baseURL}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${gw.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ model: gw.modelId, messages: [{ role: "user", content: "public face" }] }),
    });
    expect(chat.status).toBe(200);
    for (const path of ["/admin/v1/orgs", "/", "/machines", "/auth/v1/session", "/metrics"]) {
      const res = await fetch(`${gw.relay.url}${path}`, { headers: admin });
      expect([path, res.status, ((await res.json()) as { error: { code: string } }).error.code]).toEqual([path, 404, "unknown_url"]);
    }
    expect((await fetch(`${gw.relay.url}/health`)).status).toBe(200);
  });

  it("serves the admin API, the web application and metrics on the admin listener, and no gateway", async () => {
    expect((await fetch(`${gw.relay.adminUrl}/admin/v1/orgs`, { headers: admin })).status).toBe(200);
    const page = await fetch(`${gw.relay.adminUrl}/machines`);
    expect([page.status, page.headers.get("content-type")]).toEqual([200, "text/html; charset=utf-8"]);
    expect((await fetch(`${gw.relay.adminUrl}/metrics`, { headers: admin })).status).toBe(200);
    const chat = await fetch(`${gw.relay.adminUrl}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${gw.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ model: gw.modelId, messages: [{ role: "user", content: "wrong door" }] }),
    });
    expect(chat.status).toBe(404);
  });

  it("lets `makina admin --data-dir` find the admin listener", async () => {
    const r = await runCli(["admin", "org", "list", "--data-dir", gw.dataDir, "--json"]);
    expect(r.code, r.stderr).toBe(0);
    expect((JSON.parse(r.stdout) as { id: string }[]).map((o) => o.id)).toContain(gw.orgId);
  });
});
