import { copyFileSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startCli, stopCli } from "../helpers/cli.js";
import { testModelPath } from "../helpers/models.js";

interface Quickstart {
  base_url: string;
  web_url: string;
  stack_id: string;
  stack_state: string;
  stack_error: string | null;
  api_key: string;
  model: string;
  admin: { login: string; password: string };
}

describe("makina up: the all-in-one quickstart", () => {
  let dataDir: string;
  beforeAll(() => {
    dataDir = mkdtempSync(join(tmpdir(), "makina-up-"));
  });
  afterAll(() => {
    rmSync(dataDir, { recursive: true, force: true });
  });

  const up = () =>
    startCli(["up", "--data-dir", dataDir, "--port", "0", "--grpc-port", "0", "--model", testModelPath(), "--threads", "1"], /Ctrl-C stops it/, { MAKINA_AGENT_GPU: "false" });

  it("prints a base URL, an API key and a model id that an OpenAI client can use, and saves them", async () => {
    const { child, output } = await up();
    try {
      const saved = JSON.parse(readFileSync(join(dataDir, "quickstart.json"), "utf8")) as Quickstart;
      expect(statSync(join(dataDir, "quickstart.json")).mode & 0o777).toBe(0o600);
      expect(output()).toContain(`base URL:  ${saved.base_url}`);
      expect(output()).toContain(`API key:   ${saved.api_key}`);
      expect(output()).toContain(`model:     ${saved.model}`);
      expect(output()).toContain(`web:       ${saved.web_url}  (sign in as admin, password ${saved.admin.password})`);
      expect(saved.model).toBe("stories260K");
      expect(saved).toMatchObject({ stack_state: "deployed", stack_error: null });
      expect(saved.admin.login).toBe("admin");

      // The printed web URL serves the web application, and the printed login signs in to it.
      expect(await (await fetch(saved.web_url)).text()).toContain('<div id="app">');
      const signIn = await fetch(`${saved.web_url}auth/v1/sign-in`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ login: "admin", password: saved.admin.password }) });
      expect(signIn.status).toBe(200);

      const client = new OpenAI({ baseURL: saved.base_url, apiKey: saved.api_key, maxRetries: 0 });
      expect((await client.models.list()).data.map((m) => m.id)).toEqual(["stories260K"]);
      const res = await client.chat.completions.create({ model: saved.model, messages: [{ role: "user", content: "Hello!" }], max_tokens: 5 });
      expect(res.usage!.completion_tokens).toBe(5);
      // The demo stack serves embeddings too.
      const embedded = await client.embeddings.create({ model: saved.model, input: ["Hello!", "Hi!"] });
      expect(embedded.data.map((d) => d.embedding.length)).toEqual([64, 64]);
    } finally {
      expect(await stopCli(child)).toBe(0);
    }
  });

  it("reuses the organization, machine, stack and key on the next start", async () => {
    const first = JSON.parse(readFileSync(join(dataDir, "quickstart.json"), "utf8")) as Quickstart;
    const { child } = await up();
    try {
      const second = JSON.parse(readFileSync(join(dataDir, "quickstart.json"), "utf8")) as Quickstart;
      expect(second.api_key).toBe(first.api_key);
      expect(second.admin.password).toBe(first.admin.password);
      const client = new OpenAI({ baseURL: second.base_url, apiKey: second.api_key, maxRetries: 0 });
      const res = await client.chat.completions.create({ model: second.model, messages: [{ role: "user", content: "Hello again" }], max_tokens: 3 });
      expect(res.choices[0]!.finish_reason).toBe("length");
    } finally {
      expect(await stopCli(child)).toBe(0);
    }
  });

  it("does not print a first password that the admin has changed since", async () => {
    const first = JSON.parse(readFileSync(join(dataDir, "quickstart.json"), "utf8")) as Quickstart;
    let { child, output } = await up();
    expect(output()).toContain(`password ${first.admin.password})`);
    try {
      const saved = JSON.parse(readFileSync(join(dataDir, "quickstart.json"), "utf8")) as Quickstart;
      const base = new URL(saved.web_url).origin;
      const signIn = await fetch(`${base}/auth/v1/sign-in`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ login: "admin", password: saved.admin.password }) });
      const { csrf_token } = (await signIn.json()) as { csrf_token: string };
      const cookie = signIn.headers.get("set-cookie")!.split(";")[0]!;
      const changed = await fetch(`${base}/auth/v1/password`, {
        method: "POST",
        headers: { cookie, "x-csrf-token": csrf_token, "content-type": "application/json" },
        body: JSON.stringify({ current_password: saved.admin.password, new_password: "my own password now" }),
      });
      expect(changed.status).toBe(200);
    } finally {
      expect(await stopCli(child)).toBe(0);
    }
    ({ child, output } = await up());
    try {
      expect(output()).toContain("(sign in as admin, with the password you set)");
      expect(output()).not.toContain(first.admin.password);
      expect((JSON.parse(readFileSync(join(dataDir, "quickstart.json"), "utf8")) as Quickstart).admin.password).toBe("");
    } finally {
      expect(await stopCli(child)).toBe(0);
    }
  });

  it("stays up when its demo model cannot be pulled, says why, and lets the web application retry", async () => {
    const dir = mkdtempSync(join(tmpdir(), "makina-up-bad-"));
    // A model the machine does not have yet.
    const later = join(dir, "later.gguf");
    try {
      const { child, output } = await startCli(["up", "--data-dir", dir, "--port", "0", "--grpc-port", "0", "--model", later, "--threads", "1", "--log-format", "text"], /Ctrl-C stops it/, {
        MAKINA_AGENT_GPU: "false",
      });
      try {
        const saved = JSON.parse(readFileSync(join(dir, "quickstart.json"), "utf8")) as Quickstart;
        expect(saved.stack_state).toBe("failed");
        expect(saved.stack_error).toContain(later);
        expect(output()).toContain(`model:     later  (NOT deployed: ${saved.stack_error}; retry or pick another model on the stack's page)`);
        expect(output()).toContain(`web:       ${saved.web_url}`);
        // The failure is logged as a line a person reads (--log-format text), not as JSON.
        expect(output()).toMatch(/^\d\d:\d\d:\d\d ERROR deployer: deploy failed {2}stackId=stk_\w+ machineId=mach_\w+ err=".*later\.gguf/m);
        expect(output().split("\n").filter((l) => l.startsWith("{"))).toEqual([]);
        // Still up: the web application answers, and its API offers the retry.
        const admin = new URL(saved.web_url);
        const session = await fetch(`${admin.origin}/auth/v1/sign-in`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ login: "admin", password: saved.admin.password }) });
        const { csrf_token } = (await session.json()) as { csrf_token: string };
        const cookie = session.headers.get("set-cookie")!.split(";")[0]!;
        const retry = () => fetch(`${admin.origin}/admin/v1/stacks/${saved.stack_id}/deploy`, { method: "POST", headers: { cookie, "x-csrf-token": csrf_token } });
        // The machine is asked again: without the file, the retry says so at once.
        const refused = await retry();
        expect([refused.status, ((await refused.json()) as { error: { message: string } }).error.message]).toEqual([400, expect.stringContaining(`There is no file at ${later} on this machine.`)]);
        copyFileSync(testModelPath(), later);
        const retried = await retry();
        expect(retried.status).toBe(200);
        expect(((await retried.json()) as { state: string }).state).toBe("deploying");
      } finally {
        expect(await stopCli(child)).toBe(0);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
