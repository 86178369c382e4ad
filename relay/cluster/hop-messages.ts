import { EMPTY_STEP_RESULT, MakinaError, type ChatInput, type ErrorReport, type LogLine, type MachineLoad, type StepResult, type TokenEvent, type Usage } from "../../proto/index.js";
import type { RelayEvent } from "../events/index.js";
import { cleanLoad } from "../link/index.js";
import { cleanLog, MAX_LOG_LINES } from "../machines/index.js";

/**
 * The messages relays exchange over NATS (JSON). Subjects:
 *
 * - `makina.machines`: each relay's {@link MachinesSnapshot}, every second and whenever it changes.
 * - `makina.hop.<relay>`: a {@link HopRequest} for a machine linked to that relay.
 * - `makina.hop.<relay>.ctl`: {@link HopControl}: credit for a request's answer, or its cancellation.
 * - `makina.reply.<relay>.<n>`: the {@link HopReply} messages of request `n` sent by that relay (those made in
 *   one turn of the serving relay's event loop as one message, `{batch: [replies]}`).
 * - `makina.events`: each relay's control-plane events (`{from, event}`), for live pages on every relay.
 * - `makina.deploy` (`{stack}`): the relay holding that stack's machine's link runs its deployment.
 * - `makina.loads.<relay>` (`{machines}`, answered with a {@link LoadsReply}): the latest load of those machines
 *   linked to that relay, for the overview.
 * - `makina.stop` (`{stack}`, answered once done by the relay holding the link, and only by it): stop that stack
 *   there (its deployment, then its runtime).
 *
 * The same requests, controls and replies also travel on the relays' direct connections (peer-links.ts), one
 * JSON message per line: `{q: HopRequest}` and `{c: HopControl}` from the relay that dialed, `{n, r: HopReply}`
 * back to it.
 */
export const SUBJECTS = {
  machines: "makina.machines",
  hop: (relayId: string) => `makina.hop.${relayId}`,
  control: (relayId: string) => `makina.hop.${relayId}.ctl`,
  replies: (relayId: string) => `makina.reply.${relayId}.*`,
  reply: (relayId: string, n: number) => `makina.reply.${relayId}.${n}`,
  events: "makina.events",
  deploy: "makina.deploy",
  stop: "makina.stop",
  loads: (relayId: string) => `makina.loads.${relayId}`,
  modelFiles: (relayId: string) => `makina.model-files.${relayId}`,
  modelLoads: (relayId: string) => `makina.model-loads.${relayId}`,
  logReads: (relayId: string) => `makina.log-reads.${relayId}`,
} as const;

/** The one relay a message on `subject` is for (its seal's lane), or "" for a subject every relay hears. */
export function addresseeOf(subject: string): string {
  return /^makina\.(?:hop|reply|loads|model-files|model-loads|log-reads)\.([A-Za-z0-9_-]+)/.exec(subject)?.[1] ?? "";
}

/** What a relay answers on `makina.loads.<relay>` (`{machines: [ids]}`): the latest load of each it holds, and its age. */
export interface LoadsReply {
  loads: [machineId: string, load: MachineLoad, ageMs: number][];
}

/** The machines a loads request asks for (at most 10,000), or undefined. */
export function readLoadsRequest(m: unknown): string[] | undefined {
  return isObject(m) && Array.isArray(m.machines) && m.machines.length <= 10_000 && m.machines.every(isId) ? m.machines : undefined;
}

/** The loads of a reply, each made safe to show; the malformed ones left out. */
export function readLoadsReply(m: unknown): LoadsReply["loads"] {
  if (!isObject(m) || !Array.isArray(m.loads)) return [];
  return m.loads.filter((l): l is LoadsReply["loads"][number] => Array.isArray(l) && isId(l[0]) && isObject(l[1]) && isCount(l[2])).map(([id, load, age]) => [id, cleanLoad(load), age]);
}

/**
 * One machine a relay holds the link of: its id, requests in flight, whether its link is congested, its ready stacks;
 * and, when some of those are on-demand stacks whose model is not loaded now, which (`unloadedStacks`) and what the
 * machine has free to load one (`placeFree`: 1 when it has a place under its `--max-loaded`; `freeBytes`: its memory
 * budget's bytes left, -1 for no budget), as the machine's link says them to routing on that relay. Absent: every
 * ready stack's model is loaded (or, from a relay older than these fields, not known: counted loaded).
 */
export type AnnouncedMachine =
  | [machineId: string, inFlight: number, congested: 0 | 1, readyStacks: string[]]
  | [machineId: string, inFlight: number, congested: 0 | 1, readyStacks: string[], unloadedStacks: string[], placeFree: 0 | 1, freeBytes: number];

/**
 * The machines one relay holds. A relay with many machines sends them in parts (each well under NATS's message
 * limit): `parts` messages with the same `seq`, numbered by `part` from 0; the list is whole once all came.
 */
export interface MachinesSnapshot {
  relay: string;
  /** Where the relay takes its peers' direct connections (`host:port`), when it does. */
  peer?: string;
  machines: AnnouncedMachine[];
  seq?: number;
  part?: number;
  parts?: number;
}

/** A request sent to the relay holding the machine's link. */
export interface HopRequest {
  /** The sending relay, and the request's number there: its replies go to `makina.reply.<from>.<n>`. */
  from: string;
  n: number;
  machine: string;
  stack: string;
  input: ChatInput;
  firstTokenTimeoutMs: number;
  steps: number;
  /** Answer events the sender takes before it grants more. */
  credit: number;
}

/** From the sender of a request to the relay serving it. */
export type HopControl = { from: string; n: number; credit: number } | { from: string; n: number; cancel: true };

/**
 * From the relay serving a request to its sender: answer events, then the error that ended it (if one did),
 * and last the tokens it used (`usage`, null when unknown). `noUsage`: refused before it ran, no usage follows.
 * `s` numbers the replies of one request from 0: a gap (a reply lost while a connection to NATS was down)
 * fails the request rather than leave words out of its answer.
 */
export type HopReply = { s: number } & ({ e: TokenEvent } | { err: ErrorReport; noUsage?: true } | { usage: Usage | null });

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const isId = (v: unknown): v is string => typeof v === "string" && /^[A-Za-z0-9_-]{1,64}$/.test(v);
const isCount = (v: unknown): v is number => typeof v === "number" && Number.isInteger(v) && v >= 0 && v <= 1e9;
/** A memory budget's bytes left as announced: a whole number of bytes, or -1 for no budget. */
const isFreeBytes = (v: unknown): v is number => typeof v === "number" && Number.isSafeInteger(v) && v >= -1;

/**
 * One announced machine as received: its four fields, and the three of its unloaded stacks all or none (fields after
 * those, from a newer relay, are not read).
 */
function isAnnouncedMachine(a: unknown): a is AnnouncedMachine {
  if (!Array.isArray(a) || !isId(a[0]) || !isCount(a[1]) || (a[2] !== 0 && a[2] !== 1) || !Array.isArray(a[3]) || !a[3].every(isId)) return false;
  if (a.length === 4) return true;
  return a.length >= 7 && Array.isArray(a[4]) && a[4].every(isId) && (a[5] === 0 || a[5] === 1) && isFreeBytes(a[6]);
}

/** A snapshot as received, or undefined when it is not one. */
export function readSnapshot(m: unknown): MachinesSnapshot | undefined {
  if (!isObject(m) || !isId(m.relay) || !Array.isArray(m.machines)) return undefined;
  if (!m.machines.every(isAnnouncedMachine)) return undefined;
  if (m.peer !== undefined && !isPeerAddress(m.peer)) return undefined;
  if (m.parts !== undefined && !(isCount(m.parts) && m.parts >= 1 && m.parts <= 10_000 && isCount(m.part) && m.part < m.parts && isCount(m.seq))) return undefined;
  return m as unknown as MachinesSnapshot;
}

/** A request as received (its chat input was checked by the relay that took it from the client), or undefined. */
export function readRequest(m: unknown): HopRequest | undefined {
  if (!isObject(m) || !isId(m.from) || !isCount(m.n) || !isId(m.machine) || !isId(m.stack) || !isObject(m.input)) return undefined;
  if (!isCount(m.firstTokenTimeoutMs) || !isCount(m.steps) || !isCount(m.credit) || m.credit < 1) return undefined;
  if (!Array.isArray(m.input.messages)) return undefined;
  return m as unknown as HopRequest;
}

/** `host:port`, `[v6]:port` included, as a relay announces its peer address. */
const isPeerAddress = (v: unknown): v is string => typeof v === "string" && v.length <= 300 && /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):\d{1,5}$/.test(v);

/** A message on a direct connection from the relay that dialed it: a request, or a request's credit or cancellation. */
export function readPeerMessage(m: unknown): { request: HopRequest } | { control: HopControl } | undefined {
  if (!isObject(m)) return undefined;
  const request = "q" in m ? readRequest(m.q) : undefined;
  if (request) return { request };
  const control = "c" in m ? readControl(m.c) : undefined;
  return control ? { control } : undefined;
}

/** An answer on a direct connection: the request's number there and the reply, or undefined. */
export function readPeerAnswer(m: unknown): { n: number; reply: HopReply } | undefined {
  if (!isObject(m) || !isCount(m.n)) return undefined;
  const reply = readReply(m.r);
  return reply ? { n: m.n, reply } : undefined;
}

export function readControl(m: unknown): HopControl | undefined {
  if (!isObject(m) || !isId(m.from) || !isCount(m.n)) return undefined;
  if (m.cancel === true) return { from: m.from, n: m.n, cancel: true };
  return isCount(m.credit) ? { from: m.from, n: m.n, credit: m.credit } : undefined;
}

/**
 * The replies of one message over NATS: one reply, or `{batch: [replies]}` (those the serving relay made in one
 * turn of its event loop); undefined when any is malformed.
 */
export function readReplies(m: unknown): HopReply[] | undefined {
  if (isObject(m) && Array.isArray(m.batch)) {
    if (m.batch.length > 1000) return undefined;
    const replies = m.batch.map(readReply);
    return replies.every((r) => r !== undefined) ? (replies as HopReply[]) : undefined;
  }
  const reply = readReply(m);
  return reply && [reply];
}

export function readReply(m: unknown): HopReply | undefined {
  if (!isObject(m) || !isCount(m.s)) return undefined;
  if (isObject(m.e) && typeof m.e.type === "string") {
    if (m.e.type === "end" && !isUsage(m.e.usage)) return undefined;
    return m as HopReply;
  }
  if (isObject(m.err) && typeof m.err.code === "string" && typeof m.err.message === "string") return m as HopReply;
  if ("usage" in m && (m.usage === null || isUsage(m.usage))) return m as HopReply;
  return undefined;
}

/** Token counts as a relay may report them: whole numbers, not past what any request could use. */
function isUsage(u: unknown): boolean {
  return isObject(u) && isCount(u.promptTokens) && isCount(u.completionTokens) && (u.cachedTokens === undefined || (isCount(u.cachedTokens) && u.cachedTokens <= u.promptTokens));
}

/** Another relay's control-plane event as received, or undefined (not one, or this relay's own). */
export function readEvent(m: unknown, self: string): RelayEvent | undefined {
  if (!isObject(m) || !isId(m.from) || m.from === self || !isObject(m.event)) return undefined;
  const e = m.event;
  if (!isId(e.orgId)) return undefined;
  if (e.type === "machine" && isId(e.machineId)) return { type: "machine", orgId: e.orgId, machineId: e.machineId };
  if (e.type === "stack" && isId(e.stackId)) return { type: "stack", orgId: e.orgId, stackId: e.stackId };
  if (e.type === "key" && (isId(e.keyId) || e.keyId === "*")) return { type: "key", orgId: e.orgId, keyId: e.keyId as string };
  return undefined;
}

/** The stack id of a deploy or stop message, or undefined. */
export function readStackMessage(m: unknown): string | undefined {
  return isObject(m) && isId(m.stack) ? m.stack : undefined;
}

/** A look at a model file asked of the relay holding a machine's link: `{machine, ref, runtime}`. */
export interface ModelFileAsk {
  machine: string;
  ref: string;
  runtime: string;
}

/** The ask of a model file check, or undefined (malformed, or a reference longer than any stack may name). */
export function readModelFileAsk(m: unknown): ModelFileAsk | undefined {
  return isObject(m) && isId(m.machine) && typeof m.ref === "string" && m.ref.length <= 4096 && typeof m.runtime === "string" && m.runtime.length <= 32
    ? { machine: m.machine, ref: m.ref, runtime: m.runtime }
    : undefined;
}

/** What the machine answered (`{result}`), what it refused (`{refused: {code, message}}`: nothing there, not loadable), or that the relay cannot tell (`{unknown}`). */
export type ModelFileReply = { result: StepResult } | { refused: { code: "not_found" | "invalid_value"; message: string } } | { unknown: true };

/** The machine's answer as another relay relayed it: its result, a refusal (thrown), or undefined when it says nothing usable. */
export function readModelFileReply(m: unknown): StepResult | undefined {
  if (!isObject(m)) return undefined;
  const refused = m.refused;
  if (isObject(refused) && (refused.code === "not_found" || refused.code === "invalid_value") && typeof refused.message === "string") {
    throw new MakinaError(refused.code, refused.message.slice(0, 2000), { param: "model" });
  }
  const r = m.result;
  if (!isObject(r) || typeof r.modelPath !== "string" || r.modelPath.length > 4096) return undefined;
  const size = r.modelSizeBytes;
  if (typeof size !== "number" || !Number.isSafeInteger(size) || size < 0 || !isCount(r.kvBytesPerToken) || !isCount(r.trainContextSize)) return undefined;
  return { ...EMPTY_STEP_RESULT, modelPath: r.modelPath, modelSizeBytes: size, kvBytesPerToken: r.kvBytesPerToken, trainContextSize: r.trainContextSize, embeddingModel: r.embeddingModel === true, rankingModel: r.rankingModel === true };
}

/** An on-demand stack's model to load or unload on a machine linked to the relay asked (`makina.model-loads.<relay>`). */
export interface ModelLoadAsk {
  machine: string;
  stack: string;
  load: boolean;
  timeoutMs: number;
}

export function readModelLoadAsk(m: unknown): ModelLoadAsk | undefined {
  return isObject(m) && isId(m.machine) && isId(m.stack) && typeof m.load === "boolean" && isCount(m.timeoutMs) && m.timeoutMs <= 3_600_000 ? { machine: m.machine, stack: m.stack, load: m.load, timeoutMs: m.timeoutMs } : undefined;
}

/** Codes a load or unload may be refused with, as the machine said them (anything else: unknown). */
const LOAD_REFUSALS = new Set(["runtime_unavailable", "insufficient_memory", "machine_offline"] as const);
type LoadRefusal = typeof LOAD_REFUSALS extends Set<infer C> ? C : never;

/** Done (`{done}`), or refused with the machine's reason (`{refused: {code, message}}`). */
export type ModelLoadReply = { done: true } | { refused: { code: LoadRefusal; message: string } };

/** The answer of the relay holding the machine: nothing when done; a refusal thrown; anything else unusable (thrown as `machine_offline`). */
export function readModelLoadReply(m: unknown): void {
  if (isObject(m) && m.done === true) return;
  const refused = isObject(m) ? m.refused : undefined;
  if (isObject(refused) && LOAD_REFUSALS.has(refused.code as LoadRefusal) && typeof refused.message === "string") {
    throw new MakinaError(refused.code as LoadRefusal, refused.message.slice(0, 2000), { retryAfterMs: 5000 });
  }
  throw new MakinaError("machine_offline", "The relay holding the machine said nothing usable of the load.", { retryAfterMs: 2000 });
}

/** A refusal to send back: the machine's reason for the codes it may give, else the relay's own words. */
export function modelLoadRefusal(err: MakinaError): ModelLoadReply {
  return LOAD_REFUSALS.has(err.code as LoadRefusal) ? { refused: { code: err.code as LoadRefusal, message: err.message } } : { refused: { code: "runtime_unavailable", message: "The relay holding the machine could not do it." } };
}

/** A read of a machine's log (`stack` "": its own; else that stack's) through the relay holding its link. */
export interface LogReadAsk {
  machine: string;
  stack: string;
  after: number;
  limit: number;
}

export function readLogReadAsk(m: unknown): LogReadAsk | undefined {
  if (!isObject(m) || !isId(m.machine) || !(m.stack === "" || isId(m.stack)) || !Number.isSafeInteger(m.after) || (m.after as number) < 0 || !isCount(m.limit)) return undefined;
  return { machine: m.machine, stack: m.stack as string, after: m.after as number, limit: Math.min(MAX_LOG_LINES, Math.max(1, m.limit)) };
}

/** The lines read (`{lines, truncated}`), or `{unknown: true}` when the machine could not be asked there. */
export type LogReadReply = { lines: LogLine[]; truncated: boolean } | { unknown: true };

/** The lines another relay read, each checked (a count, a time, a level word, a text within bounds); undefined when it could not read them. */
export function readLogReadReply(m: unknown, limit: number): { logLines: LogLine[]; logTruncated: boolean } | undefined {
  return isObject(m) ? cleanLog(m.lines, m.truncated, limit) : undefined;
}
