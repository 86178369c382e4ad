import { describe, expect, it } from "vitest";
import { checkRedirect } from "../../agent/models/redirect-policy.js";
import { addressClass, parseHfRef } from "../../proto/index.js";

describe("where a model download may be redirected", () => {
  it("classes addresses by their bytes: loopback, link-local, private, reserved or public, v4, v6, and v4 inside v6 however written", () => {
    const cases: [string, string][] = [
      ["127.0.0.1", "loopback"],
      ["127.8.9.10", "loopback"],
      ["0.0.0.0", "loopback"],
      ["::1", "loopback"],
      ["::", "loopback"],
      ["::ffff:127.0.0.1", "loopback"],
      ["169.254.169.254", "link-local"],
      ["fe80::1", "link-local"],
      ["10.1.2.3", "private"],
      ["172.16.0.1", "private"],
      ["172.31.255.255", "private"],
      ["192.168.1.10", "private"],
      ["100.64.0.1", "private"],
      ["fd12:3456::1", "private"],
      ["::ffff:192.168.0.1", "private"],
      ["224.0.0.1", "reserved"],
      ["ff02::1", "reserved"],
      // However an IPv4 address is written inside an IPv6 one, it is that address.
      ["::ffff:7f00:1", "loopback"],
      ["[::ffff:7f00:0001]", "loopback"],
      ["::ffff:a9fe:a9fe", "link-local"],
      ["::127.0.0.1", "loopback"],
      ["64:ff9b::7f00:1", "loopback"],
      ["64:ff9b::169.254.169.254", "link-local"],
      ["64:ff9b::808:808", "public"],
      ["64:ff9b:1::1", "private"],
      ["2002:c0a8:0101::1", "private"],
      ["0:0:0:0:0:ffff:10.0.0.1", "private"],
      ["fe80::1%eth0", "link-local"],
      ["::ffff:0:127.0.0.1", "loopback"],
      ["::ffff:0:a9fe:a9fe", "link-local"],
      ["2001:0:4136:e378:8000:63bf:3fff:fdd2", "reserved"],
      ["fec0::1", "private"],
      ["2001:db8::1", "reserved"],
      ["192.0.2.1", "reserved"],
      ["198.18.0.1", "reserved"],
      ["not-an-address", "reserved"],
      ["172.32.0.1", "public"],
      ["8.8.8.8", "public"],
      ["2606:4700::1111", "public"],
    ];
    expect(cases.map(([ip]) => [ip, addressClass(ip)])).toEqual(cases);
  });

  const resolve = async (host: string) =>
    ({ "huggingface.co": ["18.1.2.3"], "cdn.example": ["2606:4700::1"], "mirror.lan": ["192.168.1.5"], "nas.lan": ["192.168.1.6"], "sneaky.example": ["8.8.4.4", "127.0.0.1"] })[host] ??
    Promise.reject(new Error(`ENOTFOUND ${host}`));
  const check = (from: string, to: string) => checkRedirect(new URL(from), new URL(to), resolve).then(() => "followed", (e: Error) => e.message);

  it("follows https redirects on the internet, and from an http mirror, http ones", async () => {
    expect(await check("https://huggingface.co/a/b/resolve/main/m.gguf", "https://cdn.example/blob")).toBe("followed");
    expect(await check("http://mirror.lan/m.gguf", "http://nas.lan/blob")).toBe("followed");
    expect(await check("http://mirror.lan/m.gguf", "https://cdn.example/blob")).toBe("followed");
  });

  it("refuses leaving https, other schemes, this machine, link-local and private addresses from a public origin, and names that do not resolve", async () => {
    expect(await check("https://huggingface.co/m.gguf", "http://cdn.example/blob")).toBe("The download of https://huggingface.co/m.gguf was redirected to http://cdn.example/blob, which leaves https: refused.");
    expect(await check("http://mirror.lan/m.gguf", "file:///etc/passwd")).toMatch(/whose scheme file: is not http\(s\): refused\.$/);
    expect(await check("https://huggingface.co/m.gguf", "https://127.0.0.1/x")).toMatch(/a loopback address: refused\.$/);
    expect(await check("https://huggingface.co/m.gguf", "https://[::1]/x")).toMatch(/a loopback address: refused\.$/);
    expect(await check("https://huggingface.co/m.gguf", "https://169.254.169.254/x")).toMatch(/a link-local address: refused\.$/);
    expect(await check("https://huggingface.co/m.gguf", "https://nas.lan/x")).toMatch(/a private address: refused\.$/);
    // A name with one bad address among good ones is refused: the connection could take any of them.
    expect(await check("https://huggingface.co/m.gguf", "https://sneaky.example/x")).toMatch(/a loopback address: refused\.$/);
    expect(await check("https://huggingface.co/m.gguf", "https://nowhere.example/x")).toMatch(/whose host cannot be resolved \(ENOTFOUND nowhere\.example\): refused\.$/);
    // A mirror on the LAN may redirect within the LAN, but not to this machine or to link-local addresses.
    expect(await check("http://mirror.lan/m.gguf", "http://127.0.0.1/x")).toMatch(/a loopback address: refused\.$/);
    expect(await check("http://mirror.lan/m.gguf", "http://169.254.169.254/x")).toMatch(/a link-local address: refused\.$/);
  });
});

describe("hf: references", () => {
  it("name a file in a repository, at a revision", () => {
    expect(parseHfRef("hf:bartowski/Llama-3.2-3B-Instruct-GGUF/Llama-3.2-3B-Instruct-Q4_K_M.gguf")).toEqual({ owner: "bartowski", repo: "Llama-3.2-3B-Instruct-GGUF", revision: "main", file: "Llama-3.2-3B-Instruct-Q4_K_M.gguf" });
    expect(parseHfRef("hf:org/repo@v1.2/sub/dir/m.gguf")).toEqual({ owner: "org", repo: "repo", revision: "v1.2", file: "sub/dir/m.gguf" });
    // A repository itself, as vLLM and MLX take it.
    expect(parseHfRef("hf:Qwen/Qwen2.5-0.5B-Instruct")).toEqual({ owner: "Qwen", repo: "Qwen2.5-0.5B-Instruct", revision: "main", file: "" });
  });

  it("never reach outside it", () => {
    for (const ref of ["hf:org/repo/../x.gguf", "hf:org/repo/sub/../../x.gguf", "hf:./repo/m.gguf", "hf:org/../m.gguf", "hf:org/repo@../m.gguf", "hf:org/repo/m%2F.gguf", "hf:org/repo/ m.gguf", "hf:org/repo/m.gguf#x", "hf:org", "hf:org/repo/"]) {
      expect(() => parseHfRef(ref), ref).toThrow(/Not a valid Hugging Face reference/);
    }
  });

  it("have no part that a tool given it as an argument would read as an option", () => {
    for (const ref of ["hf:-org/repo/m.gguf", "hf:org/--repo/m.gguf", "hf:org/repo@-v/m.gguf", "hf:org/repo/-m.gguf", "hf:org/repo/sub/--output=x.gguf"]) {
      expect(() => parseHfRef(ref), ref).toThrow(/never beginning with -/);
    }
    expect(parseHfRef("hf:org/re-po/m-1.gguf").repo).toBe("re-po");
  });
});
