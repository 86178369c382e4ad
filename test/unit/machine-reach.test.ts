import { describe, expect, it } from "vitest";
import { EMPTY_STEP_RESULT, MakinaError, silentLogger, type RelayToAgent, type StepResult } from "../../proto/index.js";
import { AgentRegistry, AgentSession, MachineLoads, type ReceivedLoad } from "../../relay/link/index.js";
import { LinkCarrier, MachineReach, type LocalDeployments, type MachineCarrier, type ModelCheck } from "../../relay/machines/index.js";
import type { InferenceTarget } from "../../relay/routing/index.js";

// The machine seam picks, for each machine, the carrier that reaches it: this relay's link when the machine is
// linked here, else the other relays' (over NATS). Here the link is a real AgentSession whose agent answers
// looks at model files; the other relays' carrier is a stand-in that records what it is asked (the real one,
// over a real nats-server, is walked by test/integration/relays-cross.test.ts).
describe("the machine seam", () => {
  const found: StepResult = { ...EMPTY_STEP_RESULT, modelPath: "/models/here.gguf", modelSizeBytes: 1234, kvBytesPerToken: 16, trainContextSize: 512 };
  const load = (cpuPercent: number) => ({ sampledAtMs: 1, cpuPercent, memoryUsedBytes: 1, memoryTotalBytes: 2, gpus: [] });

  /** A machine linked to this relay, whose agent answers every command with `found`. */
  function linkHere(registry: AgentRegistry, machineId: string): AgentSession {
    const session: AgentSession = new AgentSession(machineId, "org_1", {
      send: (m: RelayToAgent) => {
        if (m.type === "command") queueMicrotask(() => session.handle({ type: "result", commandId: m.commandId, result: found }));
      },
      close: () => {},
    }, silentLogger());
    registry.add(session);
    return session;
  }

  function setUp(withOthers: boolean) {
    const registry = new AgentRegistry();
    const loads = new MachineLoads();
    const ran: string[] = [];
    const stopped: string[] = [];
    const runner: LocalDeployments = {
      run: (session, stackId) => void ran.push(`${session.machineId}/${stackId}`),
      stop: async (machineId, stackId) => {
        stopped.push(`${machineId}/${stackId}`);
        return registry.get(machineId) !== undefined;
      },
    };
    const asked: string[] = [];
    const far = { state: "open", readyStacks: new Set(["stk_far"]), inFlight: 0, congested: false, infer: () => (async function* () {})() } as unknown as InferenceTarget;
    const others: MachineCarrier = {
      target: (id) => (id === "mach_far" ? far : undefined),
      deploy: (id, stackId) => (asked.push(`deploy ${id}/${stackId}`), id === "mach_far"),
      stop: async (id, stackId) => (asked.push(`stop ${id}/${stackId}`), id === "mach_far"),
      checkModel: async (id, check: ModelCheck) => {
        asked.push(`check ${id} ${check.ref}`);
        if (id !== "mach_far") throw new MakinaError("machine_offline", "No relay holds this machine's link now.");
        return { ...found, modelPath: check.ref };
      },
      loadModel: async (id, stackId, load) => {
        asked.push(`${load ? "load" : "unload"} ${id}/${stackId}`);
        if (id !== "mach_far") throw new MakinaError("machine_offline", "No relay holds this machine's link now.");
      },
      readLog: async (id, stackId, after) => {
        asked.push(`log ${id}/${stackId || "agent"} after ${after}`);
        if (id !== "mach_far") throw new MakinaError("machine_offline", "No relay holds this machine's link now.");
        return { logLines: [{ seq: after + 1, timeMs: 5, level: "info", text: "far" }], logTruncated: false };
      },
      loads: async (ids) => new Map<string, ReceivedLoad>(ids.filter((id) => id === "mach_far").map((id) => [id, { load: load(50), receivedAt: 2 }])),
    };
    const reach = new MachineReach(new LinkCarrier(registry, loads, runner), withOthers ? others : undefined);
    return { registry, loads, ran, stopped, asked, far, reach };
  }

  it("asks a machine linked here over its link, and one linked to another relay through that relay", async () => {
    const { registry, ran, stopped, asked, far, reach } = setUp(true);
    const session = linkHere(registry, "mach_here");
    const check: ModelCheck = { kind: "checkModel", ref: "/models/x.gguf", runtime: "gguf" };

    const here = reach.at("mach_here");
    expect(here.target).toBe(session);
    expect(await here.checkModel(check)).toEqual(found);
    expect(here.deploy("stk_1")).toBe(true);
    expect(await here.stop("stk_1")).toBe(true);
    expect([ran, stopped]).toEqual([["mach_here/stk_1"], ["mach_here/stk_1"]]);

    const there = reach.at("mach_far");
    expect(there.target).toBe(far);
    expect((await there.checkModel(check)).modelPath).toBe("/models/x.gguf");
    expect(there.deploy("stk_2")).toBe(true);
    expect(await there.stop("stk_2")).toBe(true);
    await there.loadModel("stk_2", true, 1000);
    await there.loadModel("stk_2", false, 1000);
    expect((await there.readLog("", 7, 50)).logLines.map((l) => l.text)).toEqual(["far"]);
    // Nothing of the far machine ran on this relay's links, and nothing of the near one left this relay.
    expect(ran).toEqual(["mach_here/stk_1"]);
    expect(asked).toEqual(["check mach_far /models/x.gguf", "deploy mach_far/stk_2", "stop mach_far/stk_2", "load mach_far/stk_2", "unload mach_far/stk_2", "log mach_far/agent after 7"]);
  });

  it("routes to the link here while it is open, else through the relay holding the machine, else to the closing link (which routing skips)", () => {
    const { registry, far, reach } = setUp(true);
    const session = linkHere(registry, "mach_far");
    expect(reach.targets.get("mach_far")).toBe(session);
    session.close();
    expect(reach.targets.get("mach_far")).toBe(far);
    const lonely = linkHere(registry, "mach_gone");
    lonely.close();
    expect(reach.targets.get("mach_gone")).toBe(lonely);
    expect(reach.targets.get("mach_unknown")).toBeUndefined();
  });

  it("without other relays, reads routes from the links themselves and refuses a machine linked nowhere at once", async () => {
    const { registry, ran, stopped, reach } = setUp(false);
    expect(reach.targets).toBe(registry);
    const nowhere = reach.at("mach_nowhere");
    await expect(nowhere.checkModel({ kind: "checkModel", ref: "/m.gguf", runtime: "gguf" })).rejects.toMatchObject({ code: "machine_offline" });
    // Its deployment waits for the machine to link (the runner of the relay it links to runs it then).
    expect(nowhere.deploy("stk_1")).toBe(false);
    expect(ran).toEqual([]);
    // A stop still ends a deployment of it this relay may be running.
    expect(await nowhere.stop("stk_1")).toBe(false);
    expect(stopped).toEqual(["mach_nowhere/stk_1"]);
    expect(await nowhere.load()).toBeUndefined();
  });

  it("gives each machine's latest load from where it is linked, leaving out the ones nobody knows", async () => {
    const { registry, loads, reach } = setUp(true);
    linkHere(registry, "mach_here");
    loads.reported("mach_here", load(10));
    const all = await reach.loads(["mach_here", "mach_far", "mach_unknown"]);
    expect([...all.keys()]).toEqual(["mach_here", "mach_far"]);
    expect([all.get("mach_here")!.load.cpuPercent, all.get("mach_far")!.load.cpuPercent]).toEqual([10, 50]);
    expect((await reach.at("mach_far").load())?.load.cpuPercent).toBe(50);
  });
});
