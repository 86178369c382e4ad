import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hashPassword } from "../../relay/keys/index.js";
import { signedInPage } from "../helpers/chromium.js";
import type { HubRepo, HubRepoFiles } from "../../relay/admin-contract/index.js";
import { runCli } from "../helpers/cli.js";
import { REPO_ROOT, testModelPath } from "../helpers/models.js";
import { OP } from "../helpers/operator.js";
import { startTestGateway, type TestGateway } from "../helpers/test-gateway.js";

/**
 * The Forge's search of the model hub (issue 46, point 1), against a stand-in for Hugging Face's API on loopback
 * (the hub cannot be reached from here): its search (`/api/models?search=`), a repository's files with their sizes
 * (`/api/models/{id}?blobs=true`), and the files themselves, whose bytes are the real test model's, served with
 * ranged requests as the hub serves them: the relay reads their headers, never the whole file.
 */
describe("searching the model hub from the Forge", () => {
  let gw: TestGateway;
  let hub: Server;
  const model = readFileSync(testModelPath());
  /** What the stand-in hub was asked: paths, and the byte ranges of file reads. */
  const asked: { path: string; range?: string; token: boolean }[] = [];
  const repos = [
    {
      id: "tiny-org/stories-GGUF",
      downloads: 12_345,
      likes: 67,
      tags: ["gguf", "llama", "license:mit", "text-generation"],
      siblings: [
        { rfilename: "README.md", size: 1200 },
        { rfilename: "stories260K.Q8_0.gguf", size: model.length },
        { rfilename: "stories260K-F32.gguf", size: model.length },
        { rfilename: "big/stories-Q4_K_M-00001-of-00002.gguf", size: 600_000 },
        { rfilename: "big/stories-Q4_K_M-00002-of-00002.gguf", size: 585_376 },
      ],
    },
    { id: "tiny-org/stories-mlx", downloads: 99, likes: 1, tags: ["mlx", "safetensors", "license:apache-2.0"], siblings: [{ rfilename: "model.safetensors", size: 10 }] },
    { id: "other/stories-hf", downloads: 5000, likes: 3, tags: ["safetensors", "transformers"], gated: "manual", siblings: [] },
    // Gated: its answers and files only with the relay's hub token.
    { id: "gated-org/secret-GGUF", downloads: 1, likes: 0, tags: ["gguf"], gated: "manual", siblings: [{ rfilename: "secret.Q4_0.gguf", size: model.length }] },
  ];
  const TOKEN = "hf_test_token_123";

  beforeAll(async () => {
    hub = createServer((req, res) => {
      const url = new URL(req.url ?? "/", "http://hub");
      asked.push({ path: url.pathname + url.search, range: req.headers.range, token: req.headers.authorization === `Bearer ${TOKEN}` });
      if (url.pathname.includes("gated-org/") && req.headers.authorization !== `Bearer ${TOKEN}`) return void res.writeHead(401).end("{}");
      if (url.pathname === "/api/models") {
        const text = (url.searchParams.get("search") ?? "").toLowerCase();
        const found = repos.filter((r) => r.id.toLowerCase().includes(text)).sort((a, b) => b.downloads - a.downloads);
        return void res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(found.map(({ siblings: _s, ...r }) => r)));
      }
      const repo = repos.find((r) => url.pathname === `/api/models/${r.id}`);
      if (repo) return void res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(repo));
      if (url.pathname.startsWith("/api/")) return void res.writeHead(404).end(JSON.stringify({ error: "Repository not found" }));
      // A file: the test model's bytes, ranged.
      const range = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? "");
      if (!/\/resolve\/main\/.*\.gguf$/.test(url.pathname)) return void res.writeHead(404).end();
      if (!range) return void res.writeHead(200, { "content-length": model.length, "accept-ranges": "bytes" }).end(model);
      const start = Number(range[1]);
      const end = Math.min(model.length - 1, range[2] ? Number(range[2]) : model.length - 1);
      res.writeHead(206, { "content-range": `bytes ${start}-${end}/${model.length}`, "content-length": end - start + 1, "accept-ranges": "bytes" }).end(model.subarray(start, end + 1));
    });
    await new Promise<void>((r) => hub.listen(0, "127.0.0.1", r));
    // The hub token, in a file (MAKINA_HF_TOKEN_FILE), as an operator keeps it.
    const tokenFile = join(mkdtempSync(join(tmpdir(), "makina-hub-token-")), "hf-token");
    writeFileSync(tokenFile, `${TOKEN}\n`, { mode: 0o600 });
    gw = await startTestGateway({ runtime: "fake", relayFlags: { hfEndpoint: `http://127.0.0.1:${(hub.address() as AddressInfo).port}`, hfTokenFile: tokenFile } });
  });
  afterAll(async () => {
    await gw?.close();
    await new Promise((r) => hub?.close(r));
  });

  const admin = async <T>(path: string) => {
    const res = await fetch(`${gw.relay.url}/admin/v1${path}`, { headers: { authorization: `Bearer ${gw.relay.adminToken}` } });
    return { status: res.status, body: (await res.json()) as T };
  };

  it("finds repositories by text, most downloaded first, with the runtime each suits, its licence and whether it is gated", async () => {
    const found = await admin<{ data: HubRepo[] }>(`/hub/search?org=${gw.orgId}&q=stories`);
    expect(found.status).toBe(200);
    expect(found.body.data.filter((r) => r.id !== "gated-org/secret-GGUF")).toEqual([
      { id: "tiny-org/stories-GGUF", downloads: 12_345, likes: 67, license: "mit", runtimes: ["gguf"], gated: false },
      { id: "other/stories-hf", downloads: 5000, likes: 3, license: null, runtimes: ["vllm"], gated: true },
      { id: "tiny-org/stories-mlx", downloads: 99, likes: 1, license: "apache-2.0", runtimes: ["mlx"], gated: false },
    ]);
    // Asked again: answered from what the relay keeps, the hub not asked.
    const searches = asked.filter((a) => a.path.startsWith("/api/models?")).length;
    expect((await admin<{ data: HubRepo[] }>(`/hub/search?org=${gw.orgId}&q=stories`)).body.data).toHaveLength(found.body.data.length);
    expect(asked.filter((a) => a.path.startsWith("/api/models?")).length).toBe(searches);
    const empty = await admin<{ error: { param: string } }>(`/hub/search?org=${gw.orgId}&q=`);
    expect([empty.status, empty.body.error.param]).toEqual([400, "q"]);
  });

  it("lists a repository's GGUF files, a split one as one, each judged for a machine and across the organization's", async () => {
    // A second machine that has never reported its hardware: nothing can be said to fit it yet.
    await gw.relay.control.machines.create(OP, { org: gw.orgId, name: "not-yet-joined" });
    const files = await admin<HubRepoFiles>(`/hub/repos/tiny-org/stories-GGUF?org=${gw.orgId}&machine=${gw.machineId}`);
    expect(files.status).toBe(200);
    expect(files.body.repo.id).toBe("tiny-org/stories-GGUF");
    expect(files.body.machine).toBe(gw.machineId);
    expect(files.body.files.map((f) => [f.model, f.quantization, f.size_bytes, f.parts])).toEqual([
      ["hf:tiny-org/stories-GGUF/big/stories-Q4_K_M-00001-of-00002.gguf", "Q4_K_M", 1_185_376, 2],
      ["hf:tiny-org/stories-GGUF/stories260K-F32.gguf", "F32", model.length, 1],
      ["hf:tiny-org/stories-GGUF/stories260K.Q8_0.gguf", "Q8_0", model.length, 1],
    ]);
    const [split, f32] = files.body.files;
    // A whole file fits the machine that serves: the panel's verdict, its memory from the header read by ranges.
    expect(f32!.compatibility).toMatchObject({ ok: true, serves: expect.arrayContaining(["chat"]) });
    expect(f32!.compatibility!.checks.find((c) => c.topic === "memory")?.message).toMatch(/MiB|GiB/);
    expect(f32!.fits).toEqual({ machines: 1, of: 2 });
    // A split file is judged as one model: the agent pulls every part (split-model.test.ts), and the headers of both
    // parts are read together.
    expect(split!.compatibility).toMatchObject({ ok: true });
    expect(split!.fits).toEqual({ machines: 1, of: 2 });
    // The files' headers were read with ranged requests, never whole.
    const reads = asked.filter((a) => a.path.includes("/resolve/main/"));
    expect(reads.length).toBeGreaterThan(0);
    expect(reads.every((r) => r.range !== undefined)).toBe(true);
    // A gated repository: read with the relay's hub token, its file's header too; the token goes to the hub only.
    const gated = await admin<HubRepoFiles>(`/hub/repos/gated-org/secret-GGUF?org=${gw.orgId}&machine=${gw.machineId}`);
    expect([gated.status, gated.body.repo.gated, gated.body.files[0]?.compatibility?.ok]).toEqual([200, true, true]);
    expect(asked.filter((a) => a.path.includes("gated-org/")).every((a) => a.token)).toBe(true);
    // A repository the hub does not have: 404; a name that is not one: 400.
    expect((await admin<{ error: { code: string } }>(`/hub/repos/nobody/nothing?org=${gw.orgId}`)).body.error.code).toBe("not_found");
  });

  it("is searched from the Forge in Chromium: a repository's files judged for the machine, and the one chosen fills the model", async () => {
    await gw.relay.store.users.create({ orgId: gw.orgId, login: "builder", passwordHash: await hashPassword("builder-password-1"), role: "admin" });
    const { browser, page } = await signedInPage(gw.relay.url, "builder", "builder-password-1");
    try {
      await page.goto(`${gw.relay.url}/forge`);
      await page.getByText("Find a model on the hub…").click();
      await page.getByLabel("Search the hub").fill("stories");
      await page.getByRole("button", { name: "Search", exact: true }).click();
      const repos = page.getByTestId("hub-repos");
      await expect.poll(() => repos.textContent()).toContain("12,345 downloads · mit");
      await page.getByRole("button", { name: "tiny-org/stories-GGUF" }).click();
      const table = page.getByTestId("hub-files");
      await expect.poll(() => table.locator("li").count()).toBe(3);
      const q8 = table.locator("li", { hasText: "stories260K.Q8_0.gguf" });
      expect(await q8.innerText()).toMatch(/Q8_0 · 1\.1 MiB · fits on 1 of 2 machines\s+This machine: Fits/);
      expect(await table.locator("li", { hasText: "00001-of-00002" }).innerText()).toMatch(/Q4_K_M · 1\.1 MiB in 2 parts · fits on 1 of 2 machines/);
      await page.screenshot({ path: join(REPO_ROOT, "test-output", "screenshots", "forge-hub-search.png") });
      // As a phone in the dark shows it: nothing runs past the screen's width.
      await page.emulateMedia({ colorScheme: "dark" });
      await page.setViewportSize({ width: 390, height: 900 });
      await q8.scrollIntoViewIfNeeded();
      expect(await page.evaluate<number>("document.documentElement.scrollWidth")).toBeLessThanOrEqual(390);
      await page.screenshot({ path: join(REPO_ROOT, "test-output", "screenshots", "forge-hub-search-narrow-dark.png") });
      await page.setViewportSize({ width: 1200, height: 1000 });
      await q8.getByRole("button", { name: /^Use/ }).click();
      expect(await page.locator("#forge-custom").inputValue()).toBe("hf:tiny-org/stories-GGUF/stories260K.Q8_0.gguf");
    } finally {
      await browser.close();
    }
  });

  it("searches and lists from the command line", async () => {
    const search = await runCli(["admin", "hub", "search", "stories", "--org", gw.orgId, "--data-dir", gw.dataDir]);
    expect(search.code).toBe(0);
    expect(search.stdout).toMatch(/tiny-org\/stories-GGUF\s+gguf\s+12,345\s+67\s+mit/);
    expect(search.stdout).toMatch(/other\/stories-hf \(gated\)\s+vllm/);
    const files = await runCli(["admin", "hub", "files", "tiny-org/stories-GGUF", "--machine", gw.machineId, "--org", gw.orgId, "--data-dir", gw.dataDir]);
    expect(files.code).toBe(0);
    expect(files.stdout).toMatch(/hf:tiny-org\/stories-GGUF\/stories260K\.Q8_0\.gguf\s+Q8_0\s+\S+ \S+\s+fits\s+1 of 2 machines/);
    expect(files.stdout).toMatch(/Q4_K_M\s+1\.1 MiB \(2 parts\)\s+fits/);
    const bad = await runCli(["admin", "hub", "files", "just-a-name", "--data-dir", gw.dataDir]);
    expect([bad.code, bad.stderr]).toEqual([2, expect.stringContaining("owner/name")]);
  });

  it("says when nothing matches and when the hub is down, in Chromium, and the Forge still takes a model by reference", async () => {
    const { browser, page } = await signedInPage(gw.relay.url, "builder", "builder-password-1");
    try {
      await page.goto(`${gw.relay.url}/forge`);
      await page.getByText("Find a model on the hub…").click();
      await page.getByLabel("Search the hub").fill("no-such-model-anywhere");
      await page.getByRole("button", { name: "Search", exact: true }).click();
      await expect.poll(() => page.getByTestId("hub-repos").textContent()).toBe("Nothing on the hub matches.");
      // The hub goes down: a search says so in the relay's words, and nothing else of the Forge changes.
      await new Promise((r) => hub.close(r));
      hub.closeAllConnections();
      await page.getByLabel("Search the hub").fill("llama");
      await page.getByRole("button", { name: "Search", exact: true }).click();
      const alert = page.getByTestId("hub-search").getByRole("alert");
      await expect.poll(() => alert.textContent()).toMatch(/hub cannot be searched just now/);
      // The previous search's results are not shown as this one's.
      expect(await page.getByTestId("hub-repos").count()).toBe(0);
      await page.screenshot({ path: join(REPO_ROOT, "test-output", "screenshots", "forge-hub-down.png") });
      // A model named by reference is judged as ever: the test model's path, read on the machine.
      await page.locator("#forge-model").selectOption({ label: "Custom: a path, URL or hf: reference…" });
      await page.locator("#forge-custom").fill(testModelPath());
      const panel = page.getByTestId("compatibility");
      await expect.poll(() => panel.locator('[data-topic="format"]').textContent()).toContain("GGUF");
    } finally {
      await browser.close();
    }
  });
});
