import { describe, expect, it } from "vitest";
import { HubClient, quantizationOf, readGgufFiles, readHubRepo } from "../../relay/hub/index.js";

/** A fetch that answers each path from `answers` (a status and a body), counting the calls. */
function hubOf(answers: Record<string, [number, string]>) {
  const calls: string[] = [];
  const fetch = (async (url: string | URL, init?: RequestInit) => {
    const u = new URL(String(url));
    calls.push(u.pathname + u.search + (new Headers(init?.headers).get("authorization") ? " (token)" : ""));
    const [status, body] = answers[u.pathname] ?? [404, "{}"];
    return new Response(body, { status });
  }) as typeof globalThis.fetch;
  return { fetch, calls };
}

describe("the model hub's answers, read", () => {
  it("names a GGUF file's quantization from its name", () => {
    expect(["a.Q4_K_M.gguf", "b-IQ3_XXS.gguf", "c-q8_0.gguf", "d.f16.gguf", "e-BF16-00001-of-00003.gguf", "model.gguf", "llama-3-8b-instruct.gguf"].map(quantizationOf)).toEqual(["Q4_K_M", "IQ3_XXS", "Q8_0", "F16", "BF16", null, null]);
  });

  it("keeps only what is a repository and its GGUF files, a split file whole only when every part is there", () => {
    expect(readHubRepo({ id: "../etc/passwd" })).toBeUndefined();
    expect(readHubRepo({ id: "a/b", downloads: -5, likes: "many", tags: ["gguf", 7] })).toEqual({ id: "a/b", downloads: 0, likes: 0, license: null, runtimes: ["gguf"], gated: false });
    const files = readGgufFiles({
      siblings: [
        { rfilename: "x-Q4_0-00001-of-00002.gguf", size: 10 },
        { rfilename: "x-Q4_0-00002-of-00002.gguf", size: 5 },
        { rfilename: "y-Q8_0-00001-of-00003.gguf", size: 10 },
        { rfilename: "z.F16.gguf", lfs: { size: 7 } },
        { rfilename: "notes.txt", size: 1 },
        { rfilename: 42 },
      ],
    });
    expect(files).toEqual([
      { path: "x-Q4_0-00001-of-00002.gguf", quantization: "Q4_0", sizeBytes: 15, parts: 2 },
      { path: "z.F16.gguf", quantization: "F16", sizeBytes: 7, parts: 1 },
    ]);
  });
});

describe("the relay's client of the model hub", () => {
  const repo = JSON.stringify({ id: "a/b", tags: ["gguf"], siblings: [{ rfilename: "m.Q4_K_M.gguf", size: 3 }] });

  it("reuses an answer a while, for every organization, and bounds each organization's calls a minute", async () => {
    let now = 0;
    const { fetch, calls } = hubOf({ "/api/models": [200, JSON.stringify([{ id: "a/b" }])], "/api/models/a/b": [200, repo] });
    const hub = new HubClient({ endpoint: "https://hub.example/", fetch, now: () => now, callsPerMinute: 2, keepMs: 1000, token: () => "hf_secret" });
    expect(await hub.search("org1", "b")).toHaveLength(1);
    expect(await hub.search("org2", "b")).toHaveLength(1);
    expect(calls).toEqual(["/api/models?search=b&limit=30&sort=downloads&direction=-1 (token)"]);
    expect((await hub.repo("org1", "a/b")).files.map((f) => f.path)).toEqual(["m.Q4_K_M.gguf"]);
    // Two calls this minute for org1: a third that must reach the hub is refused; a kept answer is not.
    await expect(hub.search("org1", "other")).rejects.toMatchObject({ code: "rate_limit_requests" });
    expect(await hub.search("org1", "b")).toHaveLength(1);
    now = 61_000;
    expect(await hub.search("org1", "other")).toHaveLength(1);
    expect(calls).toHaveLength(3);
  });

  it("says what the hub failed to answer: no such repository, not JSON, too large, not a list, a name that is none", async () => {
    const { fetch } = hubOf({ "/api/models": [200, "<html>"], "/api/models/big/one": [200, JSON.stringify({ id: "big/one", pad: "x".repeat(5 * 1024 * 1024) })], "/api/models/down/hub": [503, "{}"] });
    const hub = new HubClient({ endpoint: "https://hub.example", fetch });
    await expect(hub.repo("o", "no/such")).rejects.toMatchObject({ code: "not_found", param: "repo" });
    await expect(hub.search("o", "x")).rejects.toMatchObject({ code: "hub_unavailable", message: expect.stringContaining("not JSON") });
    await expect(hub.repo("o", "big/one")).rejects.toMatchObject({ code: "hub_unavailable", message: expect.stringContaining("larger than 4 MiB") });
    await expect(hub.repo("o", "down/hub")).rejects.toMatchObject({ code: "hub_unavailable", message: expect.stringContaining("HTTP 503") });
    await expect(hub.repo("o", "a/b/../../c")).rejects.toMatchObject({ code: "invalid_value", param: "repo" });
    const unreachable = new HubClient({ endpoint: "https://hub.example", fetch: (() => Promise.reject(new Error("ECONNREFUSED"))) as typeof globalThis.fetch });
    await expect(unreachable.search("o", "x")).rejects.toMatchObject({ code: "hub_unavailable", message: expect.stringContaining("ECONNREFUSED") });
  });
});
