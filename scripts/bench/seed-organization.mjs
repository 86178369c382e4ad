// Fills a relay (started by the caller, on the built dist/) with one organization the size of a large fleet, for
// the admin API and web application benchmarks (scripts/bench-admin.mjs, scripts/bench-web.mjs). Written through the
// relay's own store, as the relay itself writes: machines online with their hardware, stacks with a finished
// deployment, keys, a day of usage and the request log. Nothing here is a product path; benchmarks only.
import { join } from "node:path";

const GiB = 2 ** 30;

/** The sizes issue 21 names (point 9): 100 machines, 1,000 stacks, 10,000 keys, 100,000 logged requests. */
export const LARGE_FLEET = { machines: 100, stacks: 1000, keys: 10_000, requests: 100_000 };

const hardware = (i) => ({
  platform: "linux",
  os: "Ubuntu 24.04",
  arch: "x64",
  cpuModel: "AMD EPYC",
  cpuPhysicalCores: 32,
  cpuLogicalCores: 64,
  memoryBytes: 256 * GiB,
  gpus: i % 2 ? [{ vendor: "NVIDIA", model: "NVIDIA H100 80GB HBM3", vramBytes: 80 * GiB, driverVersion: "580.159.04" }] : [],
  disks: [{ mount: "/", sizeBytes: 2000 * GiB, freeBytes: 1500 * GiB }],
  accelerators: i % 2 ? ["cuda"] : [],
});

/**
 * Seeds `relay` (from `dist/relay`'s startRelay) with an organization `bench` and its admin `admin` (password
 * `bench-password`). Returns the ids made, for the benchmark to visit.
 */
export async function seedOrganization(root, relay, sizes = LARGE_FLEET, log = () => {}) {
  const { hashPassword, hashSecret, createApiKey } = await import(join(root, "dist/relay/keys/index.js"));
  const OP = (await import(join(root, "dist/relay/auth/index.js"))).operatorActor();
  const { store } = relay;
  const org = await relay.control.orgs.create(OP, { name: "bench" });
  await store.users.create({ orgId: org.id, login: "admin", passwordHash: await hashPassword("bench-password"), role: "admin" });
  const memberHash = await hashPassword("a-member-password");
  for (let i = 0; i < 20; i++) await store.users.create({ orgId: org.id, login: `person-${i}@bench.test`, passwordHash: memberHash, role: "member" });

  const machines = [];
  for (let i = 0; i < sizes.machines; i++) {
    const m = await store.machines.create({ orgId: org.id, name: `gpu-${String(i).padStart(3, "0")}`, tokenHash: hashSecret(`token-${i}`) });
    await store.machines.markOnline(m.id, { hardware: hardware(i), agentVersion: "0.1.0" });
    machines.push(m.id);
  }
  log(`${machines.length} machines`);
  const stacks = [];
  for (let i = 0; i < sizes.stacks; i++) {
    const s = await store.stacks.create({
      orgId: org.id,
      name: `stack-${String(i).padStart(4, "0")}`,
      machineId: machines[i % machines.length],
      runtime: "gguf",
      modelRef: `hf:org/repo-${i}/model.gguf`,
      modelId: `model-${i}`,
      hasEndpoint: true,
    });
    const dep = await store.deployments.start(s.id, ["install_runtime", "pull_model", "configure_endpoint"]);
    for (let seq = 0; seq < 3; seq++) {
      await store.deployments.stepRunning(dep, seq);
      if (seq === 1) await store.deployments.stepDetail(dep, seq, { path: "/m", sha256: "0".repeat(64), sizeBytes: 4 * GiB });
      await store.deployments.stepFinished(dep, seq, null);
    }
    await store.deployments.finish(dep, null);
    stacks.push(s.id);
  }
  log(`${stacks.length} stacks, each with a finished deployment`);
  const keys = [];
  for (let i = 0; i < sizes.keys; i++) {
    const made = await createApiKey(store, { orgId: org.id, name: `key-${String(i).padStart(5, "0")}`, stackIds: i % 3 ? null : [stacks[i % stacks.length]], rpm: i % 2 ? 600 : null });
    keys.push(made.record.id);
  }
  log(`${keys.length} keys`);
  // A day of traffic as the gateway's usage recorder writes it: per key, model and minute, a thousand keys an hour.
  const now = Date.now();
  for (let h = 0; h < 24; h++) {
    const minute = Math.floor((now - h * 3_600_000) / 60_000) * 60_000;
    const rows = [];
    for (let i = 0; i < 1000; i++) {
      rows.push({ org_id: org.id, key_id: keys[(h * 1000 + i) % keys.length], model: `model-${i % stacks.length}`, minute, requests: 1, errors: i % 50 === 0 ? 1 : 0, prompt_tokens: 20, completion_tokens: 100 });
    }
    await store.db.insertInto("usage_minutes").values(rows).execute();
  }
  log("24,000 usage rows over the last day");
  // The request log: its last `requests` requests over the last day, one in twenty refused or failed.
  const batch = 5000;
  for (let from = 0; from < sizes.requests; from += batch) {
    const rows = [];
    for (let i = from; i < Math.min(sizes.requests, from + batch); i++) {
      const failed = i % 20 === 0;
      rows.push({
        orgId: org.id,
        at: now - Math.floor(((sizes.requests - i) / sizes.requests) * 86_400_000),
        requestId: `req-bench-${i}`,
        keyId: keys[i % keys.length],
        model: `model-${i % stacks.length}`,
        stackId: stacks[i % stacks.length],
        machineId: machines[i % machines.length],
        stream: i % 2 === 0,
        status: failed ? (i % 40 === 0 ? 429 : 503) : 200,
        errorCode: failed ? (i % 40 === 0 ? "rate_limit_requests" : "runtime_unavailable") : null,
        promptTokens: failed ? 0 : 20 + (i % 200),
        completionTokens: failed ? 0 : 50 + (i % 300),
        latencyMs: 40 + (i % 900),
        firstTokenMs: failed ? null : 15 + (i % 80),
        captureJson: null,
        captureUntil: null,
      });
    }
    await store.requests.insert(rows);
  }
  log(`${sizes.requests.toLocaleString("en-US")} logged requests`);
  return { org, machines, stacks, keys };
}
