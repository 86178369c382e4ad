import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { AgentConfigError, defaultThreads, resolveAgentConfig } from "../../agent/index.js";
import { budgetBytes } from "../../agent/stacks/memory-budget.js";
import { ConfigError, resolveRelayConfig } from "../../relay/index.js";

const PIN = "ab".repeat(32);
const creds = { server: "relay.example:8081", machineId: "mach_abc", token: "mk_mach_xyz", caSha256: PIN };

describe("configuration", () => {
  it("takes flags over environment over file over defaults, and freezes the result", () => {
    const c = resolveRelayConfig({ flags: { port: 1 }, env: { MAKINA_PORT: "2", MAKINA_GRPC_PORT: "3" }, file: { port: 4, grpcPort: 5, host: "0.0.0.0" } });
    expect([c.port, c.grpcPort, c.host, c.bodyLimitBytes]).toEqual([1, 3, "0.0.0.0", 4 * 1024 * 1024]);
    expect(Object.isFrozen(c)).toBe(true);
  });

  it("reports every problem at once", () => {
    const err = (() => {
      try {
        resolveRelayConfig({ env: { MAKINA_PORT: "http", MAKINA_LOG_LEVEL: "loud" } });
      } catch (e) {
        return e as ConfigError;
      }
    })();
    expect(err).toBeInstanceOf(ConfigError);
    expect(err!.problems).toHaveLength(2);
    const agentErr = (() => {
      try {
        resolveAgentConfig({});
      } catch (e) {
        return e as AgentConfigError;
      }
    })();
    expect(agentErr!.problems.map((p) => p.split(" ")[0])).toEqual(["server", "machineId", "token"]);
  });

  it("takes several relay addresses, repeated or separated by commas, and refuses a plaintext link to any that is not on loopback", () => {
    expect(resolveAgentConfig({ flags: { ...creds, server: ["a.example:8081", "b.example:8081"] } }).servers).toEqual(["a.example:8081", "b.example:8081"]);
    expect(resolveAgentConfig({ env: { MAKINA_AGENT_SERVER: "a.example:8081, b.example:8081,a.example:8081" }, flags: { machineId: creds.machineId, token: creds.token, caSha256: PIN } }).servers).toEqual([
      "a.example:8081",
      "b.example:8081",
    ]);
    expect(resolveAgentConfig({ flags: creds }).servers).toEqual(["relay.example:8081"]);
    expect(() => resolveAgentConfig({ flags: { ...creds, server: ["a.example:8081", "nope"] } })).toThrow(/server \(--server or MAKINA_AGENT_SERVER\) is required/);
    const plain = { machineId: creds.machineId, token: creds.token };
    expect(() => resolveAgentConfig({ flags: { ...plain, server: ["127.0.0.1:8081", "b.example:8081"] } })).toThrow(/refusing a plaintext link to b\.example:8081/);
    expect(resolveAgentConfig({ flags: { ...plain, server: ["127.0.0.1:8081", "[::1]:8081"] } }).servers).toHaveLength(2);
  });

  it("never gives inference more threads than cores minus one", () => {
    expect(defaultThreads(1)).toBe(1);
    expect(defaultThreads(2)).toBe(1);
    expect(defaultThreads(16)).toBe(15);
    expect(resolveAgentConfig({ flags: creds }, 2).threads).toBe(1);
    expect(resolveAgentConfig({ flags: { ...creds, threads: 3 } }, 2).threads).toBe(3);
  });

  it("takes a memory budget as a share or a size, and counts a share of the GPUs' memory (a Mac's and a CPU machine's: RAM)", () => {
    const GiB = 1024 ** 3;
    expect(resolveAgentConfig({ flags: creds }).memoryBudget).toEqual({ percent: 90 });
    expect(resolveAgentConfig({ flags: { ...creds, memoryBudget: "12GiB" } }).memoryBudget).toEqual({ bytes: 12 * GiB });
    expect(resolveAgentConfig({ env: { MAKINA_AGENT_MEMORY_BUDGET: "75%" }, flags: creds }).memoryBudget).toEqual({ percent: 75 });
    expect(resolveAgentConfig({ flags: { ...creds, memoryBudget: "512 MiB" } }).memoryBudget).toEqual({ bytes: 512 * 1024 ** 2 });
    for (const wrong of ["lots", "0", "150%", "12 parsecs", "-1GiB"]) {
      expect(() => resolveAgentConfig({ flags: { ...creds, memoryBudget: wrong } })).toThrow(/memoryBudget \(--memory-budget or MAKINA_AGENT_MEMORY_BUDGET\) must be a share such as 90% or a size such as 12GiB/);
    }
    const base = { platform: "linux", os: "", arch: "x64", cpuModel: "", cpuPhysicalCores: 8, cpuLogicalCores: 16, memoryBytes: 64 * GiB, disks: [] };
    const gpu = (vramBytes: number) => ({ vendor: "NVIDIA", model: "L4", vramBytes, driverVersion: "" });
    expect(budgetBytes({ percent: 90 }, { ...base, gpus: [gpu(24 * GiB), gpu(24 * GiB)], accelerators: ["cuda"] })).toBe(Math.floor(0.9 * 48 * GiB));
    // A GPU without a usable backend, or whose memory is unknown: the runtimes load into RAM.
    expect(budgetBytes({ percent: 50 }, { ...base, gpus: [gpu(24 * GiB)], accelerators: [] })).toBe(32 * GiB);
    expect(budgetBytes({ percent: 50 }, { ...base, gpus: [gpu(0)], accelerators: ["cuda"] })).toBe(32 * GiB);
    expect(budgetBytes({ percent: 50 }, { ...base, platform: "darwin", arch: "arm64", gpus: [{ ...gpu(0), vendor: "Apple" }], accelerators: ["metal"] })).toBe(32 * GiB);
    expect(budgetBytes({ bytes: 5 * GiB }, { ...base, gpus: [], accelerators: [] })).toBe(5 * GiB);
  });

  it("moves the admin API off the gateway's listener when the gateway listens publicly", () => {
    expect(resolveRelayConfig({}).adminPort).toBe("shared");
    expect(resolveRelayConfig({ flags: { host: "0.0.0.0" } })).toMatchObject({ adminHost: "127.0.0.1", adminPort: 8082 });
    expect(resolveRelayConfig({ flags: { host: "0.0.0.0", adminPort: "shared" } }).adminPort).toBe("shared");
    expect(resolveRelayConfig({ env: { MAKINA_ADMIN_PORT: "9000" } }).adminPort).toBe(9000);
    expect(() => resolveRelayConfig({ flags: { adminPort: "nine" } })).toThrow(/adminPort/);
  });

  it("keeps state in SQLite unless given a PostgreSQL URL, by flag or MAKINA_DATABASE_URL, and refuses anything else", () => {
    expect(resolveRelayConfig({}).database).toBeNull();
    expect(resolveRelayConfig({ env: { MAKINA_DATABASE_URL: "postgres://makina:pw@db:5432/makina" } }).database).toBe("postgres://makina:pw@db:5432/makina");
    expect(resolveRelayConfig({ flags: { database: "postgresql://db/m" }, env: { MAKINA_DATABASE_URL: "postgres://other/x" } }).database).toBe("postgresql://db/m");
    for (const bad of ["mysql://db/makina", "makina.db", "postgres://"]) {
      expect(() => resolveRelayConfig({ env: { MAKINA_DATABASE_URL: bad } })).toThrow(/database \(MAKINA_DATABASE_URL\) must be a PostgreSQL URL/);
    }
  });

  it("keeps rate limits in memory unless given a Redis URL, by flag or MAKINA_REDIS_URL, and refuses anything else", () => {
    expect(resolveRelayConfig({}).redis).toBeNull();
    expect(resolveRelayConfig({ env: { MAKINA_REDIS_URL: "redis://:pw@cache:6379/2" } }).redis).toBe("redis://:pw@cache:6379/2");
    expect(resolveRelayConfig({ flags: { redis: "rediss://cache" }, env: { MAKINA_REDIS_URL: "redis://other" } }).redis).toBe("rediss://cache");
    for (const bad of ["cache:6379", "http://cache", "redis://cache/db/x"]) {
      expect(() => resolveRelayConfig({ env: { MAKINA_REDIS_URL: bad } })).toThrow(/redis \(MAKINA_REDIS_URL\) must be a Redis URL/);
    }
    // What a key with limits gets while Redis is away: the relay's own window (open), or 503 (closed).
    expect(resolveRelayConfig({}).redisFail).toBe("open");
    expect(resolveRelayConfig({ env: { MAKINA_REDIS_FAIL: "closed" } }).redisFail).toBe("closed");
    expect(() => resolveRelayConfig({ flags: { redisFail: "shut" } })).toThrow(/redisFail \(MAKINA_REDIS_FAIL\) must be open or closed/);
  });

  it("joins other relays over NATS only when given a NATS URL and a PostgreSQL database, and refuses anything else", () => {
    const database = "postgres://db/m";
    expect(resolveRelayConfig({}).nats).toBeNull();
    expect(resolveRelayConfig({ env: { MAKINA_NATS_URL: "nats://u:pw@bus:4222", MAKINA_DATABASE_URL: database } }).nats).toBe("nats://u:pw@bus:4222");
    expect(resolveRelayConfig({ flags: { nats: "tls://bus", database } }).nats).toBe("tls://bus");
    for (const bad of ["bus:4222", "http://bus", "nats://bus/x"]) {
      expect(() => resolveRelayConfig({ env: { MAKINA_NATS_URL: bad, MAKINA_DATABASE_URL: database } })).toThrow(/nats \(MAKINA_NATS_URL\) must be a NATS URL/);
    }
    expect(() => resolveRelayConfig({ flags: { nats: "nats://bus" } })).toThrow(/nats \(MAKINA_NATS_URL\) joins relays that share a PostgreSQL database: give database/);
    // A bus beyond loopback with neither credentials nor TLS is refused, unless the operator says to join it so.
    const open = /nats \(MAKINA_NATS_URL\) is beyond loopback with neither credentials nor TLS: .*natsInsecure \(MAKINA_NATS_INSECURE\)/;
    expect(() => resolveRelayConfig({ flags: { nats: "nats://10.0.0.7:4222", database } })).toThrow(open);
    expect(() => resolveRelayConfig({ flags: { nats: "nats://bus.example.com", database } })).toThrow(open);
    // A name that starts like a loopback address is no loopback address.
    expect(() => resolveRelayConfig({ flags: { nats: "nats://127.bus.example.com:4222", database } })).toThrow(open);
    expect(resolveRelayConfig({ flags: { nats: "nats://bus.example.com", database, natsInsecure: true } }).natsInsecure).toBe(true);
    expect(resolveRelayConfig({ env: { MAKINA_NATS_URL: "nats://10.0.0.7:4222", MAKINA_DATABASE_URL: database, MAKINA_NATS_INSECURE: "true" } }).natsInsecure).toBe(true);
    for (const fine of ["nats://127.0.0.1:4222", "nats://localhost:4222", "nats://[::1]:4222", "nats://u:pw@10.0.0.7:4222", "nats://s3cr3tt0ken@10.0.0.7:4222", "tls://10.0.0.7:4222"]) {
      const config = resolveRelayConfig({ flags: { nats: fine, database, natsInsecure: true } });
      // Said insecure (in /health) only when it is.
      expect([fine, config.natsInsecure]).toEqual([fine, false]);
    }
    const creds = resolveRelayConfig({ flags: { nats: "nats://10.0.0.7:4222", database, natsCreds: "relay.creds" } });
    expect([creds.natsCreds, creds.natsInsecure]).toEqual([resolve("relay.creds"), false]);
    expect(() => resolveRelayConfig({ flags: { natsCreds: "relay.creds" } })).toThrow(/natsCreds \(MAKINA_NATS_CREDS\) is given without nats/);
    // Where the other relays connect directly: a host and port, or off.
    expect(resolveRelayConfig({}).peerAddress).toBeNull();
    expect(resolveRelayConfig({ env: { MAKINA_PEER_ADDRESS: "10.0.0.5:8083" } }).peerAddress).toBe("10.0.0.5:8083");
    expect(resolveRelayConfig({ flags: { peerAddress: "[fd00::5]:0" } }).peerAddress).toBe("[fd00::5]:0");
    expect(resolveRelayConfig({ flags: { peerAddress: "off" } }).peerAddress).toBe("off");
    for (const bad of ["10.0.0.5", "relay one:80", "relay:99999", "fd00::5:80", "0.0.0.0:8083", "[::]:8083"]) {
      expect(() => resolveRelayConfig({ flags: { peerAddress: bad } })).toThrow(/peerAddress \(MAKINA_PEER_ADDRESS\)/);
    }
    expect(resolveRelayConfig({}).changeLeaseMs).toBe(10_000);
    expect(() => resolveRelayConfig({ env: { MAKINA_CHANGE_LEASE_MS: "50" } })).toThrow(/changeLeaseMs/);
  });

  it("takes the secrets key from a file or MAKINA_SECRETS_KEY (never a flag), one way only, and never echoes a malformed one", () => {
    expect([resolveRelayConfig({}).secretsKeyFile, resolveRelayConfig({}).secretsKey]).toEqual([null, null]);
    expect(resolveRelayConfig({ flags: { secretsKeyFile: "secrets.key" } }).secretsKeyFile).toBe(resolve("secrets.key"));
    expect(resolveRelayConfig({ env: { MAKINA_SECRETS_KEY_FILE: "/etc/makina/key" } }).secretsKeyFile).toBe("/etc/makina/key");
    const key = "q".repeat(43) + "=";
    expect(resolveRelayConfig({ env: { MAKINA_SECRETS_KEY: ` ${key}\n` } }).secretsKey).toBe(key);
    expect(resolveRelayConfig({ env: { MAKINA_SECRETS_KEY: "ab".repeat(32) } }).secretsKey).toBe("ab".repeat(32));
    // Only from the environment: a flag would show in ps.
    expect(resolveRelayConfig({ flags: { secretsKey: key } }).secretsKey).toBeNull();
    expect(() => resolveRelayConfig({ env: { MAKINA_SECRETS_KEY: key }, flags: { secretsKeyFile: "k" } })).toThrow(/give the secrets key one way: secretsKeyFile \(MAKINA_SECRETS_KEY_FILE\) or MAKINA_SECRETS_KEY, not both/);
    let message = "";
    try {
      resolveRelayConfig({ env: { MAKINA_SECRETS_KEY: "hunter2-is-my-password" } });
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toContain("MAKINA_SECRETS_KEY is not a secrets key: it must be 32 random bytes in base64 or hex (openssl rand -base64 32)");
    expect(message).not.toContain("hunter2");
  });

  it("takes for the install command only a public URL and link address that are a host and port, nothing a shell would run", () => {
    expect(resolveRelayConfig({ flags: { publicUrl: "https://relay.example.com/" } }).publicUrl).toBe("https://relay.example.com");
    expect(resolveRelayConfig({ flags: { publicUrl: "http://10.0.0.5:8080" } }).publicUrl).toBe("http://10.0.0.5:8080");
    expect(resolveRelayConfig({ flags: { publicUrl: "https://[fd00::5]:8443" } }).publicUrl).toBe("https://[fd00::5]:8443");
    expect(resolveRelayConfig({ flags: { publicGrpcAddress: "relay.example.com:8081" } }).publicGrpcAddress).toBe("relay.example.com:8081");
    for (const bad of ["https://relay.example.com;id", "https://$(id).example.com", "https://relay example.com", "https://relay.example.com/x", "ftp://relay.example.com"]) {
      expect(() => resolveRelayConfig({ flags: { publicUrl: bad } })).toThrow(/publicUrl \(MAKINA_PUBLIC_URL\) must be an http\(s\) URL without a path/);
    }
    for (const bad of ["relay.example.com", "relay.example.com:8081;id", "`id`:8081", "relay.example.com:0", "relay.example.com:70000"]) {
      expect(() => resolveRelayConfig({ flags: { publicGrpcAddress: bad } })).toThrow(/publicGrpcAddress \(MAKINA_PUBLIC_GRPC_ADDRESS\) must be host:port/);
    }
    expect(resolveRelayConfig({ env: { MAKINA_PUBLIC_ADDRESS: "10.0.0.5" } }).publicAddress).toBe("10.0.0.5");
    expect(resolveRelayConfig({ flags: { publicAddress: "relay.example.com" } }).publicAddress).toBe("relay.example.com");
    expect(resolveRelayConfig({ flags: { publicAddress: "[fd00::5]" } }).publicAddress).toBe("fd00::5");
    for (const bad of ["relay.example.com:8081", "https://relay.example.com", "$(id)", "relay example.com", "relay.example.com;id"]) {
      expect(() => resolveRelayConfig({ flags: { publicAddress: bad } })).toThrow(/publicAddress \(MAKINA_PUBLIC_ADDRESS\) must be a host name or an IP address/);
    }
  });

  it("reads the agent's credentials from the environment", () => {
    const c = resolveAgentConfig({ env: { MAKINA_AGENT_SERVER: "h:1", MAKINA_AGENT_MACHINE_ID: "mach_1", MAKINA_AGENT_TOKEN: "mk_mach_1", MAKINA_AGENT_GPU: "false", MAKINA_AGENT_CA_SHA256: PIN } });
    expect([c.server, c.machineId, c.gpu, c.caSha256]).toEqual(["h:1", "mach_1", false, PIN]);
  });

  it("refuses a plaintext link beyond loopback unless told --insecure, and says why", () => {
    const plain = { server: "relay.example:8081", machineId: "mach_abc", token: "mk_mach_xyz" };
    expect(() => resolveAgentConfig({ flags: plain })).toThrow(/refusing a plaintext link to relay\.example:8081: anyone on the path could read prompts, answers and this machine's token/);
    expect(resolveAgentConfig({ flags: { ...plain, insecure: true } }).insecure).toBe(true);
    expect(resolveAgentConfig({ flags: { ...plain, tls: true } }).tls).toBe(true);
    for (const server of ["127.0.0.1:8081", "localhost:8081", "[::1]:8081"]) expect(resolveAgentConfig({ flags: { ...plain, server } }).server).toBe(server);
    expect(() => resolveAgentConfig({ flags: { ...plain, caSha256: "not-a-fingerprint" } })).toThrow(/64 hex digits/);
    expect(resolveAgentConfig({ flags: { ...plain, caSha256: PIN.toUpperCase().replace(/(..)(?!$)/g, "$1:") } }).caSha256).toBe(PIN);
  });

  it("reads the machine token from a file, so it never shows in ps", () => {
    const dir = mkdtempSync(join(tmpdir(), "makina-token-"));
    const file = join(dir, "token");
    writeFileSync(file, "mk_mach_fromAFile123\n", { mode: 0o600 });
    const { token: _token, ...noToken } = creds;
    expect(resolveAgentConfig({ flags: { ...noToken, tokenFile: file } }).token).toBe("mk_mach_fromAFile123");
    expect(() => resolveAgentConfig({ flags: { ...noToken, tokenFile: join(dir, "missing") } })).toThrow(/tokenFile .* cannot be read/);
    writeFileSync(file, "not a token");
    expect(() => resolveAgentConfig({ flags: { ...noToken, tokenFile: file } })).toThrow(/must hold a machine token/);
    rmSync(dir, { recursive: true, force: true });
  });

  it("takes the load interval by its name, and by its former one (MAKINA_AGENT_USAGE_INTERVAL_MS) after it", () => {
    expect(resolveAgentConfig({ flags: creds }).loadIntervalMs).toBe(5000);
    expect(resolveAgentConfig({ flags: creds, env: { MAKINA_AGENT_USAGE_INTERVAL_MS: "2000" } }).loadIntervalMs).toBe(2000);
    expect(resolveAgentConfig({ flags: creds, env: { MAKINA_AGENT_LOAD_INTERVAL_MS: "3000", MAKINA_AGENT_USAGE_INTERVAL_MS: "2000" } }).loadIntervalMs).toBe(3000);
    // A config file written before (usage_interval_ms, read as usageIntervalMs) keeps its setting.
    expect(resolveAgentConfig({ flags: creds, file: { usageIntervalMs: 4000 } as never }).loadIntervalMs).toBe(4000);
  });

  it("takes a Hugging Face endpoint and token from Makina's variables, Hugging Face's own, or the config file", () => {
    expect(resolveAgentConfig({ flags: creds })).toMatchObject({ hfEndpoint: "https://huggingface.co", hfToken: undefined });
    expect(resolveAgentConfig({ flags: creds, env: { HF_ENDPOINT: "https://hf-mirror.example/", HF_TOKEN: "hf_a" } })).toMatchObject({ hfEndpoint: "https://hf-mirror.example", hfToken: "hf_a" });
    expect(resolveAgentConfig({ flags: creds, env: { MAKINA_AGENT_HF_TOKEN: "hf_m", HF_TOKEN: "hf_a" } }).hfToken).toBe("hf_m");
    expect(resolveAgentConfig({ flags: creds, file: { hfToken: "hf_f" } }).hfToken).toBe("hf_f");
    expect(() => resolveAgentConfig({ flags: creds, env: { HF_ENDPOINT: "huggingface.co", HF_TOKEN: "hf a" } })).toThrow(
      expect.objectContaining({ problems: [expect.stringMatching(/^hfEndpoint .* must be an http\(s\) URL/), expect.stringMatching(/^hfToken .* without spaces/)] }),
    );
  });
});
