import { describe, expect, it } from "vitest";
import { parseModelRef } from "../../agent/models/model-ref.js";
import { createLogger, redactText, resolveLogFormat } from "../../proto/index.js";

describe("structured logs", () => {
  it("redact secrets by key and by shape, and carry child bindings", () => {
    const lines: string[] = [];
    const log = createLogger({ write: (l) => lines.push(l) }).child({ component: "http", requestId: "r1" });
    log.info("auth", { authorization: "Bearer mk_live_abc", note: "key mk_live_SECRET123 and token mk_mach_T0K3N", nested: { apiKey: "x" } });
    const line = JSON.parse(lines[0]!) as Record<string, unknown>;
    expect(line).toMatchObject({ level: "info", msg: "auth", component: "http", requestId: "r1", authorization: "[redacted]", nested: { apiKey: "[redacted]" } });
    expect(lines[0]).not.toContain("SECRET123");
    expect(lines[0]).not.toContain("T0K3N");
  });

  it("redact fields named as secrets, and keep counts whose names only contain 'token'", () => {
    const lines: string[] = [];
    createLogger({ write: (l) => lines.push(l) }).info("request canceled", {
      completionTokens: 17,
      promptTokens: 5,
      maxTokens: 64,
      machine_token: "x",
      hfToken: "y",
      newPassword: "z",
      "set-cookie": "c",
      csrfSecret: "s",
    });
    expect(JSON.parse(lines[0]!)).toMatchObject({ completionTokens: 17, promptTokens: 5, maxTokens: 64, machine_token: "[redacted]", hfToken: "[redacted]", newPassword: "[redacted]", "set-cookie": "[redacted]", csrfSecret: "[redacted]" });
  });

  it("redact Hugging Face tokens, but not words that merely start with hf_", () => {
    const lines: string[] = [];
    createLogger({ write: (l) => lines.push(l) }).warn("download failed", { err: new Error("GET with hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567 refused; set hf_token") });
    expect(lines[0]).not.toContain("AbCdEfGh");
    expect(lines[0]).toContain("hf_[redacted] refused; set hf_token");
  });

  it("redact a URL's query string, where signed download links carry their credentials, keeping where it leads", () => {
    const lines: string[] = [];
    createLogger({ write: (l) => lines.push(l) }).info("pulling model", {
      url: "https://cdn.example/models/m.gguf?X-Amz-Signature=abcdef0123&X-Amz-Credential=AKIA123#part",
      err: new Error("GET https://mirror.example/m.gguf?token=s3cret failed: 403"),
    });
    const line = JSON.parse(lines[0]!) as { url: string; err: { message: string } };
    expect(line.url).toBe("https://cdn.example/models/m.gguf?[redacted]#part");
    expect(line.err.message).toBe("GET https://mirror.example/m.gguf?[redacted] failed: 403");
    expect(lines[0]).not.toContain("s3cret");
    createLogger({ write: (l) => lines.push(l) }).error("down", { db: "postgres://db.example/makina?password=hunter2&sslmode=require", ws: "wss://push.example/feed?token=abc" });
    expect(lines[1]).not.toMatch(/hunter2|token=abc/);
    expect(lines[1]).toContain("postgres://db.example/makina?[redacted]");
  });

  it("redact the password of a URL (a database's), keeping the rest to say where", () => {
    const lines: string[] = [];
    createLogger({ write: (l) => lines.push(l) }).error("database unreachable", { err: new Error("connect postgres://makina:s3cr%40t@db.example.com:5432/makina failed"), url: "https://example.com:8443/a:b@c" });
    expect(lines[0]).not.toContain("s3cr");
    expect(lines[0]).toContain("postgres://makina:[redacted]@db.example.com:5432/makina failed");
    expect(lines[0]).toContain("https://example.com:8443/a:b@c");
  });

  it("redact a URL's user part when it is one word (often a token), keeping where it leads", () => {
    expect(redactText("git clone https://ghp_abc123@github.com/org/repo.git")).toBe("git clone https://[redacted]@github.com/org/repo.git");
    expect(redactText("https://user:pw@host/m.gguf?X-Amz-Signature=abc")).toBe("https://user:[redacted]@host/m.gguf?[redacted]");
    expect(redactText("/models/a@b.gguf and hf:org/repo:Q4")).toBe("/models/a@b.gguf and hf:org/repo:Q4");
  });

  it("write readable lines for a terminal: time, level, component, message, fields, errors with their causes", () => {
    const lines: string[] = [];
    const log = createLogger({ format: "text", write: (l) => lines.push(l) }).child({ component: "deployer", stackId: "stk_1" });
    const err = new Error("The download failed after 5 attempts", { cause: new Error("getaddrinfo ENOTFOUND huggingface.co") });
    log.error("deploy failed", { err, attempt: 5, url: "https://example.com/a?sig=mk_live_abc", detail: { stage: "pull" }, token: "mk_mach_secret" });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^\d\d:\d\d:\d\d ERROR deployer: deploy failed {2}stackId=stk_1 err="The download failed after 5 attempts ← getaddrinfo ENOTFOUND huggingface\.co" attempt=5 url=https:\/\/example\.com\/a\?\[redacted\] detail=\{"stage":"pull"\} token=\[redacted\]$/,
    );
    // A long value is cut; the line stays one line.
    createLogger({ format: "text", write: (l) => lines.push(l) }).warn("long", { body: "x".repeat(500) + "\nnext" });
    expect(lines[1]!.length).toBeLessThan(260);
    expect(lines[1]).not.toContain("\n");
    // Text from elsewhere (a runtime's output, an agent's error) cannot drive the terminal or break the line.
    createLogger({ format: "text", write: (l) => lines.push(l) }).child({ component: "x\u001b]0;owned\u0007" }).warn("bad\nline", { out: "\u001b[31mred\u009b2J", "k\u001b": 1, err: new Error("e\u001b[2J") });
    expect(lines[2]).not.toMatch(/[\u0000-\u001f\u007f-\u009f]/);
    expect(lines[2]).toContain('out="\\u001b[31mred\\u009b2J"');
  });

  it("are JSON unless told otherwise; auto means readable in a terminal only", () => {
    const lines: string[] = [];
    createLogger({ write: (l) => lines.push(l) }).info("hello", { n: 1 });
    expect(JSON.parse(lines[0]!)).toMatchObject({ level: "info", msg: "hello", n: 1 });
    expect([resolveLogFormat("auto", true), resolveLogFormat("auto", false), resolveLogFormat("json", true), resolveLogFormat(undefined, true)]).toEqual(["text", "json", "json", "json"]);
  });

  it("drops lines below the level", () => {
    const lines: string[] = [];
    createLogger({ level: "warn", write: (l) => lines.push(l) }).info("quiet");
    expect(lines).toEqual([]);
  });
});

describe("model references", () => {
  it("resolves hf: references to Hugging Face download URLs", () => {
    expect(parseModelRef("hf:Qwen/Qwen2.5-0.5B-Instruct-GGUF/qwen2.5-0.5b-instruct-q4_k_m.gguf")).toEqual({
      kind: "url",
      url: "https://huggingface.co/Qwen/Qwen2.5-0.5B-Instruct-GGUF/resolve/main/qwen2.5-0.5b-instruct-q4_k_m.gguf",
    });
    expect(parseModelRef("hf:org/repo@v1.0/sub/model.gguf")).toEqual({ kind: "url", url: "https://huggingface.co/org/repo/resolve/v1.0/sub/model.gguf" });
  });

  it("resolves hf: references against a mirror when one is configured", () => {
    expect(parseModelRef("hf:org/repo/m.gguf", "/", "https://hf-mirror.example/")).toEqual({ kind: "url", url: "https://hf-mirror.example/org/repo/resolve/main/m.gguf" });
    expect(parseModelRef("hf:org/repo/m.gguf", "/", "http://127.0.0.1:9/hub")).toEqual({ kind: "url", url: "http://127.0.0.1:9/hub/org/repo/resolve/main/m.gguf" });
  });

  it("keeps URLs and resolves local paths against the working directory", () => {
    expect(parseModelRef("https://example.com/m.gguf")).toEqual({ kind: "url", url: "https://example.com/m.gguf" });
    expect(parseModelRef("models/m.gguf", "/srv")).toEqual({ kind: "file", path: "/srv/models/m.gguf" });
    expect(parseModelRef("/abs/m.gguf")).toEqual({ kind: "file", path: "/abs/m.gguf" });
  });

  it("rejects a malformed hf: reference", () => {
    expect(() => parseModelRef("hf:just-a-name")).toThrow(/Hugging Face reference/);
  });
});
