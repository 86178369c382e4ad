// Where a process's CPU time went, by stage of the gateway's path, from a V8 CPU profile (`node --cpu-prof`).
// Each sample is charged to the innermost frame on its stack that is Makina's code (a file of dist/) or
// node-llama-cpp's, and that file's stage; a sample with neither on its stack (Node's HTTP parser, a socket's
// read callback, the garbage collector) is charged by Node's own frame. Idle time is left out, and so is the
// profiler's own work as it stops.
import { readFileSync } from "node:fs";

/** Stages of Makina's code, by the file's path under dist/. First match wins. */
const FILES = [
  [/relay\/http\/gateway\/sse-writer\.js$/, "SSE out (writer)"],
  [/relay\/http\/(openai|anthropic|rerank)\//, "API codec (decode, encode)"],
  [/relay\/http\/gateway\//, "gateway route"],
  [/relay\/http\//, "HTTP in (body, ids, app)"],
  [/relay\/(keys|limits|routing|usage|metrics|ids|ledger)\//, "keys, limits, plan, usage"],
  [/relay\/link\/|proto\/link\//, "link (relay side)"],
  [/agent\/link\/|agent\/flow\//, "agent dispatch and credit"],
  [/agent\/runtimes\/openai-server\//, "upstream server (agent's HTTP client, its events)"],
  [/agent\/runtimes\/gguf\/(gguf-process-runtime|gguf-wire)\.js$/, "model socket and frames"],
  [/agent\/runtimes\/gguf\/(gguf-server|frame-outbox)\.js$/, "model socket and frames"],
  [/agent\/runtimes\/gguf\/(gguf-runtime|pace-evaluation)\.js$/, "pacing and runtime glue"],
  [/agent\/runtimes\/gguf\//, "pacing and runtime glue"],
  [/node_modules\/node-llama-cpp\//, "node-llama-cpp (JS)"],
  [/\/dist\//, "other Makina code"],
];

/** Node's own frames, for samples with no code of ours on their stack. */
const NODE = [
  [/^node:_http|^node:http/, "HTTP (Node, no caller of ours)"],
  [/^node:net|stream_base_commons|^node:internal\/streams/, "sockets and streams (Node, no caller of ours)"],
];

function stageOfFrame(frame) {
  const url = frame.url ?? "";
  if (url.includes("/dist/") || url.includes("node-llama-cpp")) for (const [re, stage] of FILES) if (re.test(url)) return stage;
  return undefined;
}

/** CPU ms per stage in one profile, and the profile's total of busy ms. */
export function profileStages(path) {
  const profile = JSON.parse(readFileSync(path, "utf8"));
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const stageOf = new Map();
  const onStack = (id, test) => {
    for (let at = id; at !== undefined; at = parent.get(at)) if (test(byId.get(at).callFrame)) return true;
    return false;
  };
  const classify = (id) => {
    if (stageOf.has(id)) return stageOf.get(id);
    const node = byId.get(id);
    const name = node.callFrame.functionName;
    let stage;
    if (name === "(idle)") stage = null;
    // The profiler stopping itself (scripts/bench/cpu-prof-preload.cjs) is none of the path's time.
    else if (onStack(id, (f) => f.url?.includes("cpu-prof-preload"))) stage = null;
    else if (name === "(garbage collector)") stage = "garbage collector";
    else if (name === "(program)") stage = "(program: V8 and native, outside JS)";
    else {
      for (let at = id; at !== undefined && !stage; at = parent.get(at)) stage = stageOfFrame(byId.get(at).callFrame);
      if (!stage) {
        const url = node.callFrame.url ?? "";
        stage = NODE.find(([re]) => re.test(url))?.[1] ?? "Node (other, no caller of ours)";
      }
    }
    stageOf.set(id, stage);
    return stage;
  };
  const ms = {};
  let busy = 0;
  profile.samples.forEach((id, i) => {
    const stage = classify(id);
    const dt = (profile.timeDeltas[i] ?? 0) / 1000;
    if (stage === null) return;
    ms[stage] = (ms[stage] ?? 0) + dt;
    busy += dt;
  });
  return { ms, busy };
}
