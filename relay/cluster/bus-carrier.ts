import { MakinaError, type Logger, type MachineLog, type StepResult } from "../../proto/index.js";
import type { ReceivedLoad } from "../link/index.js";
import { withinReplySize, type MachineCarrier, type ModelCheck } from "../machines/index.js";
import type { InferenceTarget } from "../routing/index.js";
import type { FleetBus } from "./fleet-bus.js";
import {
  modelLoadRefusal,
  readLoadsReply,
  readLoadsRequest,
  readModelFileAsk,
  readModelFileReply,
  readModelLoadAsk,
  readModelLoadReply,
  readLogReadAsk,
  readLogReadReply,
  readStackMessage,
  type LogReadAsk,
  type LogReadReply,
  SUBJECTS,
  type LoadsReply,
  type ModelFileReply,
  type ModelLoadAsk,
  type ModelLoadReply,
} from "./hop-messages.js";
import type { RemoteMachines } from "./remote-machines.js";

/** What the relay holding a machine's link reads of a stack named on the bus (the bus's word is not taken for it). */
export type StackOnRecord = (stackId: string) => Promise<{ machineId: string; state: string } | undefined>;

/** How long a relay waits for the others to say which loads they know. */
const LOADS_WAIT_MS = 1000;
/** How long a look at a model file through another relay may take. */
const CHECK_WAIT_MS = 5000;
/** How long the relay holding the link may take to stop a stack (as long as the deployment step it ends), and how long to wait when none is known to hold it. */
const STOP_WAIT_MS = 120_000;
const STOP_WAIT_UNKNOWN_MS = 2000;

/**
 * The machines linked to the other relays, reached through them over NATS: the second carrier of the machine
 * seam. Each operation has its two halves here, side by side: the asking one (a method of the carrier) and the
 * serving one (in {@link serveMachineOperations}, which answers with the serving relay's own link carrier).
 * Inference goes through `RemoteMachines` (credit, direct connections); this is everything else.
 */
export class BusCarrier implements MachineCarrier {
  constructor(
    private readonly bus: FleetBus,
    private readonly remote: RemoteMachines,
    private readonly log: Logger,
  ) {}

  target(machineId: string): InferenceTarget | undefined {
    return this.remote.get(machineId);
  }

  deploy(machineId: string, stackId: string): boolean {
    // Every relay hears it and the one holding the machine's link runs it. Sent to all rather than to the holder
    // this relay knows of: a machine that linked a moment ago is not missed.
    this.bus.publish(SUBJECTS.deploy, { stack: stackId });
    return this.remote.get(machineId) !== undefined;
  }

  async stop(machineId: string, stackId: string): Promise<boolean> {
    // The relay holding the link answers once the stop is done; none answering soon when none is known to hold it
    // means no relay does.
    const known = this.remote.get(machineId) !== undefined;
    try {
      // Any relay's answer: the machine may have linked to another relay than the one this relay knows of.
      const reply = await this.bus.request(SUBJECTS.stop, { stack: stackId }, known ? STOP_WAIT_MS : STOP_WAIT_UNKNOWN_MS);
      // Only the holder's `done` confirms it (a relay whose database failed answers an error instead).
      if (typeof reply === "object" && reply !== null && (reply as { done?: unknown }).done === true) return true;
      this.log.warn("the relay holding the machine could not stop the stack", { stackId });
      return false;
    } catch (err) {
      if (known) this.log.warn("the relay holding the machine did not confirm the stop", { stackId, error: String(err) });
      return known;
    }
  }

  async checkModel(machineId: string, check: ModelCheck): Promise<StepResult> {
    const relay = this.remote.get(machineId)?.relayId;
    if (relay === undefined) throw new MakinaError("machine_offline", "No relay holds this machine's link now.");
    const reply = await this.bus.request(SUBJECTS.modelFiles(relay), { machine: machineId, ref: check.ref, runtime: check.runtime }, CHECK_WAIT_MS, relay);
    const result = readModelFileReply(reply);
    if (!result) throw new MakinaError("machine_offline", "The relay holding the machine said nothing usable of the model file.");
    return result;
  }

  async readLog(machineId: string, stackId: string, after: number, limit: number): Promise<MachineLog> {
    const relay = this.remote.get(machineId)?.relayId;
    if (relay === undefined) throw new MakinaError("machine_offline", "No relay holds this machine's link now.");
    const reply = await this.bus.request(SUBJECTS.logReads(relay), { machine: machineId, stack: stackId, after, limit } satisfies LogReadAsk, CHECK_WAIT_MS, relay);
    const read = readLogReadReply(reply, limit);
    if (!read) throw new MakinaError("machine_offline", "The relay holding the machine could not read its log.");
    return read;
  }

  async loadModel(machineId: string, stackId: string, load: boolean, timeoutMs: number): Promise<void> {
    const relay = this.remote.get(machineId)?.relayId;
    if (relay === undefined) throw new MakinaError("machine_offline", "No relay holds this machine's link now.", { retryAfterMs: 2000 });
    readModelLoadReply(await this.bus.request(SUBJECTS.modelLoads(relay), { machine: machineId, stack: stackId, load, timeoutMs } satisfies ModelLoadAsk, timeoutMs + 5000, relay));
  }

  async loads(machineIds: readonly string[]): Promise<Map<string, ReceivedLoad>> {
    const byRelay = new Map<string, string[]>();
    for (const id of machineIds) {
      const relay = this.remote.get(id)?.relayId;
      if (relay !== undefined) byRelay.set(relay, [...(byRelay.get(relay) ?? []), id]);
    }
    const loads = new Map<string, ReceivedLoad>();
    // A relay that does not answer in time leaves its machines' loads unknown.
    await Promise.all(
      [...byRelay].map(async ([relay, machines]) => {
        const reply = await this.bus.request(SUBJECTS.loads(relay), { machines }, LOADS_WAIT_MS, relay).catch(() => undefined);
        const now = Date.now();
        const asked = new Set(machines);
        for (const [id, load, ageMs] of readLoadsReply(reply)) if (asked.has(id)) loads.set(id, { load, receivedAt: now - ageMs });
      }),
    );
    return loads;
  }
}

/**
 * The serving halves: this relay answers the others' operations on the machines linked here, with `here` (its
 * link carrier). A stack named on the bus is read from the database, which says its machine and whether the
 * operation fits its state (a deployment for a stack deploying or deployed, a stop for one that is neither).
 */
export function serveMachineOperations(bus: FleetBus, relayId: string, here: MachineCarrier, stackOf: StackOnRecord, log: Logger): void {
  bus.subscribe(SUBJECTS.deploy, (m) => {
    const stackId = readStackMessage(m);
    if (!stackId) return;
    void stackOf(stackId)
      .then((stack) => stack && (stack.state === "deploying" || stack.state === "deployed") && here.deploy(stack.machineId, stackId))
      .catch((err: unknown) => log.warn("a deployment asked by another relay could not start", { stackId, error: String(err) }));
  });
  bus.respond(SUBJECTS.stop, async (m) => {
    const stackId = readStackMessage(m);
    const stack = stackId ? await stackOf(stackId) : undefined;
    // A stack being deployed or serving is no one's to stop: an undeploy has written `undeploying` before it asks
    // (and `draft` after, when no relay answered in time: a stop read that late still goes ahead).
    if (!stackId || !stack || stack.state === "deploying" || stack.state === "deployed") return undefined;
    return (await here.stop(stack.machineId, stackId)) ? { done: true } : undefined;
  });
  bus.respond(SUBJECTS.modelFiles(relayId), async (m) => {
    const asked = readModelFileAsk(m);
    if (!asked) return undefined;
    try {
      return { result: await here.checkModel(asked.machine, { kind: "checkModel", ref: asked.ref, runtime: asked.runtime }) } satisfies ModelFileReply;
    } catch (err) {
      const e = MakinaError.from(err);
      // The machine's answer travels; anything else (offline now, no answer) leaves the file unknown there too.
      if (e.code === "not_found" || e.code === "invalid_value") return { refused: { code: e.code, message: e.message } } satisfies ModelFileReply;
      // Not linked here now, or silent: said at once, so the asking relay does not wait out its time.
      return { unknown: true } satisfies ModelFileReply;
    }
  });
  bus.respond(SUBJECTS.modelLoads(relayId), async (m) => {
    const asked = readModelLoadAsk(m);
    if (!asked) return undefined;
    // The bus's word is not taken for where the stack is: the database says, and it must be deployed there.
    const stack = await stackOf(asked.stack);
    if (!stack || stack.machineId !== asked.machine || stack.state !== "deployed") return { refused: { code: "runtime_unavailable", message: "This stack is not deployed on that machine." } } satisfies ModelLoadReply;
    try {
      await here.loadModel(asked.machine, asked.stack, asked.load, asked.timeoutMs);
      return { done: true } satisfies ModelLoadReply;
    } catch (err) {
      return modelLoadRefusal(MakinaError.from(err));
    }
  });
  bus.respond(SUBJECTS.logReads(relayId), async (m) => {
    const asked = readLogReadAsk(m);
    if (!asked) return undefined;
    // A stack's log is read from the machine the database says it is on, not the bus's word.
    const stack = asked.stack ? await stackOf(asked.stack) : undefined;
    if (asked.stack && stack?.machineId !== asked.machine) return { unknown: true } satisfies LogReadReply;
    try {
      const read = await here.readLog(asked.machine, asked.stack, asked.after, asked.limit);
      return { lines: withinReplySize(read.logLines.slice(0, asked.limit)), truncated: read.logTruncated } satisfies LogReadReply;
    } catch {
      return { unknown: true } satisfies LogReadReply;
    }
  });
  bus.respond(SUBJECTS.loads(relayId), async (m) => {
    const now = Date.now();
    const loads = await here.loads(readLoadsRequest(m) ?? []);
    return { loads: [...loads].map(([id, load]) => [id, load.load, Math.max(0, now - load.receivedAt)]) } satisfies LoadsReply;
  });
}
