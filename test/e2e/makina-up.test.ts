import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startCli, stopCli } from "../helpers/cli.js";
import { testModelPath } from "../helpers/models.js";

interface Quickstart {
  base_url: string;
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
      expect(saved.model).toBe("stories260K");
      expect(saved.admin.login).toBe("admin");

      const client = new OpenAI({ baseURL: saved.base_url, apiKey: saved.api_key, maxRetries: 0 });
      expect((await client.models.list()).data.map((m) => m.id)).toEqual(["stories260K"]);
      const res = await client.chat.completions.create({ model: saved.model, messages: [{ role: "user", content: "Hello!" }], max_tokens: 5 });
      expect(res.usage!.completion_tokens).toBe(5);
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
});
