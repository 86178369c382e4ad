import { readFileSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { addressClass } from "../../proto/index.js";
import { operatorCertificates, type OperatorCertificates } from "../helpers/certificates.js";
import { startTestGateway, type TestGateway } from "../helpers/test-gateway.js";

// Images a request names by URL are fetched by the agent, under its rules, and reach the runtime inline: no
// runtime (vLLM fetches what it is given, from the GPU host) ever fetches a URL a client chose. A local HTTPS
// server plays the public hosts `images.example` and `cdn.example`: their names resolve to it, and its address
// is let through as a public one would be. Every other address is judged as the agent judges it.
const PNG = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==", "base64");

describe("images named by URL", () => {
  let gw: TestGateway;
  let server: Server;
  let certs: OperatorCertificates;
  const hits: string[] = [];
  const names: Record<string, string[]> = {
    "images.example": ["127.0.0.1"],
    "cdn.example": ["127.0.0.1"],
    "intranet.example": ["10.0.0.7"],
    "metadata.example": ["169.254.169.254"],
    "elsewhere.test": ["127.0.0.1"],
  };
  const at = (host: string, path: string) => `https://${host}:${(server.address() as AddressInfo).port}${path}`;

  beforeAll(async () => {
    certs = operatorCertificates(["images.example", "cdn.example", "intranet.example", "metadata.example", "elsewhere.test"]);
    server = createServer({ cert: readFileSync(certs.cert), key: readFileSync(certs.key) }, (req, res) => {
      hits.push(`${req.headers.host!.replace(/:\d+$/, "")}${req.url}`);
      if (req.url === "/cat.png") return void res.writeHead(200, { "content-type": "image/png" }).end(PNG);
      if (req.url === "/moved.png") return void res.writeHead(302, { location: at("cdn.example", "/cat.png") }).end();
      if (req.url === "/to-metadata.png") return void res.writeHead(302, { location: at("metadata.example", "/latest/meta-data/") }).end();
      if (req.url === "/page.html") return void res.writeHead(200, { "content-type": "text/html" }).end("<html></html>");
      if (req.url === "/to-elsewhere.png") return void res.writeHead(302, { location: at("elsewhere.test", "/cat.png") }).end();
      if (req.url === "/cut.png") {
        res.writeHead(200, { "content-type": "image/png", "content-length": PNG.length * 10 });
        res.write(PNG);
        return void setTimeout(() => res.socket?.destroy(), 50);
      }
      res.writeHead(404).end();
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    gw = await startTestGateway({
      runtime: "fake",
      agentFlags: { allowedMediaDomains: "images.example,*.example" },
      agentOptions: {
        imageFetch: {
          resolve: async (host) => names[host] ?? Promise.reject(new Error(`getaddrinfo ENOTFOUND ${host}`)),
          allowed: (a) => a === "127.0.0.1" || addressClass(a) === "public",
          ca: readFileSync(certs.ca),
        },
      },
    });
  });
  afterAll(async () => {
    await gw?.close();
    await new Promise((r) => server.close(r));
    rmSync(certs.dir, { recursive: true, force: true });
  });

  const ask = async (url: string) => {
    const res = await fetch(`${gw.baseURL}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${gw.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ model: gw.modelId, messages: [{ role: "user", content: [{ type: "text", text: "What is this?" }, { type: "image_url", image_url: { url } }] }] }),
    });
    const body = (await res.json()) as { error?: { code: string; param: string; message: string } };
    return { status: res.status, error: body.error };
  };
  const lastImageSeen = () => gw.fake(gw.machineId, gw.modelId).seen.at(-1)!.messages[0]!.parts![1]!.imageUrl;

  it("reach the runtime inline, fetched over https from a public host, redirects followed", async () => {
    expect((await ask(at("images.example", "/cat.png"))).status).toBe(200);
    expect(lastImageSeen()).toBe(`data:image/png;base64,${PNG.toString("base64")}`);
    expect((await ask(at("images.example", "/moved.png"))).status).toBe(200);
    expect(lastImageSeen()).toBe(`data:image/png;base64,${PNG.toString("base64")}`);
    expect(hits.slice(-2)).toEqual(["images.example/moved.png", "cdn.example/cat.png"]);
    // An inline image goes as it came.
    expect((await ask("data:image/png;base64,iVBORw0KGgo=")).status).toBe(200);
    expect(lastImageSeen()).toBe("data:image/png;base64,iVBORw0KGgo=");
  });

  it("are refused with 400 when they lead anywhere but a public https host, and never asked for", async () => {
    const seenBefore = gw.fake(gw.machineId, gw.modelId).seen.length;
    const hitsBefore = hits.length;
    const cases: [string, RegExp][] = [
      [at("images.example", "/cat.png").replace("https:", "http:"), /must be https/],
      [at("intranet.example", "/cat.png"), /its host is not a public address/],
      [at("metadata.example", "/latest/meta-data/"), /its host is not a public address/],
      // (Addresses are not among the names this machine's operator allowed, whatever they are.)
      ["https://169.254.169.254/latest/meta-data/", /Images may come from/],
      ["https://[::ffff:a9fe:a9fe]/latest/meta-data/", /Images may come from/],
      ["https://unknown.example/cat.png", /its host name is not known/],
      ["https://elsewhere.test/cat.png", /Images may come from images.example, \*.example only/],
    ];
    for (const [url, message] of cases) {
      const { status, error } = await ask(url);
      expect([url, status, error]).toEqual([url, 400, expect.objectContaining({ code: "invalid_value", param: "messages", message: expect.stringMatching(message) })]);
      // Nothing of the machine's network is named back: not the address a name resolved to.
      if (!/\/\/[\d[]/.test(url)) expect(error!.message).not.toMatch(/10\.0\.0\.7|169\.254/);
    }
    expect(hits.length).toBe(hitsBefore);
    // A public host's redirect to the metadata service is not followed; a page is not an image.
    expect((await ask(at("images.example", "/to-metadata.png"))).error).toMatchObject({ code: "invalid_value", message: expect.stringMatching(/its host is not a public address/) });
    expect((await ask(at("images.example", "/page.html"))).error).toMatchObject({ code: "invalid_value", message: expect.stringMatching(/text\/html, not a PNG/) });
    // The operator's list holds at every redirect; an image cut short is no image.
    expect((await ask(at("images.example", "/to-elsewhere.png"))).error).toMatchObject({ code: "invalid_value", message: expect.stringMatching(/redirects to a host images may not come from/) });
    expect((await ask(at("images.example", "/cut.png"))).error).toMatchObject({ code: "invalid_value", message: expect.stringMatching(/could not be fetched/) });
    expect(hits.slice(hitsBefore)).toEqual(["images.example/to-metadata.png", "images.example/page.html", "images.example/to-elsewhere.png", "images.example/cut.png"]);
    // None of these reached the runtime.
    expect(gw.fake(gw.machineId, gw.modelId).seen.length).toBe(seenBefore);
  });
});
