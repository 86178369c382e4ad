import { afterEach, describe, expect, it, vi } from "vitest";
import { startTestGateway, type TestGateway } from "../helpers/test-gateway.js";

describe("stopping drains what is in flight", () => {
  let gw: TestGateway | undefined;
  afterEach(async () => {
    await gw?.close();
    gw = undefined;
  });
  const chat = (g: TestGateway, content: string) =>
    fetch(`${g.baseURL}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${g.apiKey}`, "content-type": "application/json", connection: "close" },
      body: JSON.stringify({ model: g.modelId, messages: [{ role: "user", content }] }),
    });

  it("a relay told to stop takes no new connection but lets a request in flight finish", async () => {
    const g = (gw = await startTestGateway({ runtime: "fake", relayFlags: { drainTimeoutMs: 10_000 } }));
    const slow = chat(g, "slow 100 all of this arrives");
    await vi.waitFor(() => expect(g.agent.inference.inFlight).toBe(1), { timeout: 5_000, interval: 5 });
    const stopped = g.relay.stop();
    await expect(chat(g, "too late")).rejects.toThrow();
    const res = await slow;
    expect(res.status).toBe(200);
    expect(((await res.json()) as { choices: { message: { content: string } }[] }).choices[0]!.message.content).toBe("all of this arrives");
    await stopped;
  });

  it("an agent told to stop finishes its requests while the relay turns new ones away with 503", async () => {
    const g = (gw = await startTestGateway({ runtime: "fake", agentFlags: { drainTimeoutMs: 10_000 } }));
    const slow = chat(g, "slow 100 every word of it");
    await vi.waitFor(() => expect(g.agent.inference.inFlight).toBe(1), { timeout: 5_000, interval: 5 });
    const stopped = g.agent.stop();
    await vi.waitFor(async () => {
      const refused = await chat(g, "a new one");
      expect(refused.status).toBe(503);
      expect(refused.headers.get("retry-after")).toBeTruthy();
    }, { timeout: 5_000, interval: 20 });
    const res = await slow;
    expect(res.status).toBe(200);
    expect(((await res.json()) as { choices: { message: { content: string } }[] }).choices[0]!.message.content).toBe("every word of it");
    await stopped;
  });

  it("ends what is still running once the drain period is over", async () => {
    const g = (gw = await startTestGateway({ runtime: "fake", relayFlags: { drainTimeoutMs: 200 } }));
    const stuck = chat(g, "hang");
    await vi.waitFor(() => expect(g.agent.inference.inFlight).toBe(1), { timeout: 5_000, interval: 5 });
    await g.relay.stop();
    // Either the relay still answered 503 machine_offline, or the connection was cut: never a hang, never a 200.
    const outcome = await stuck.then((r) => r.status, () => "connection closed");
    expect([503, "connection closed"]).toContain(outcome);
    await vi.waitFor(() => expect(g.agent.inference.inFlight).toBe(0), { timeout: 5_000, interval: 10 });
  });
});
