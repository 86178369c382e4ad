import { fromErrorReport, MakinaError, type ChatInput, type Logger, type TokenEvent, type Usage } from "../../proto/index.js";
import { assertEncodable, PendingInference, type InferOptions, type Room } from "../link/index.js";
import type { InferenceTarget } from "../routing/index.js";
import type { FleetBus } from "./fleet-bus.js";
import { SEAL_BYTES } from "./bus-seal.js";
import { readPeerAnswer, readReplies, readSnapshot, SUBJECTS, type AnnouncedMachine, type HopReply, type HopRequest, type MachinesSnapshot } from "./hop-messages.js";
import type { PeerConnection } from "./peer-links.js";

/** The relays' direct connections, as the sending side uses them. */
export interface Peers {
  /** The open connection to a relay, if any. */
  open(relayId: string): PeerConnection | undefined;
  /** A relay announced where it takes direct connections. */
  know(relayId: string, address: string): void;
  /** A relay is gone. */
  forget(relayId: string): void;
}

/** Answer events a request's sender takes before granting more (as a machine's link does). */
const WINDOW = 32;

/** A relay whose snapshot has not come for this long is gone: its machines are dropped, its requests fail. */
const SILENT_MS = 3500;

/** How long after a request ended its sender waits for the tokens it used before counting them unknown. */
const USAGE_WAIT_MS = 40_000;

/** The refusal for a machine whose relay cannot be reached now. */
const unreachable = (why: string) => new MakinaError("machine_offline", `The relay holding this machine's link ${why}.`, { retryAfterMs: 2000 });

/** A request this relay sent to another. */
interface Call {
  relayId: string;
  /** The direct connection the request went on (its answer comes back on it), or undefined for NATS. */
  via: PeerConnection | undefined;
  /** The number the next reply must carry. */
  nextReply: number;
  pending: PendingInference;
  onUsage: ((usage: Usage | null) => void) | undefined;
  /** The answer is over (ended, failed, or left by the client). */
  over: boolean;
  /** Its usage came (it may come before the answer's last event), or none will. */
  settled: boolean;
  timer?: NodeJS.Timeout;
}

/** A machine linked to another relay, as routing sees it; requests for it go through that relay. */
export class RemoteMachine implements InferenceTarget {
  readonly state = "open" as const;
  readonly admittedWhereLinked = true;
  readyStacks = new Set<string>();
  /** Its ready stacks whose model is not loaded now (on demand), as its relay last said. */
  unloadedStacks = new Set<string>();
  /** What it has free for one more model, as its relay last said (nothing said: none, as a local link's). */
  room: Room = { slot: true, bytes: 0 };
  congested = false;
  /** Requests in flight as its relay last said. */
  announcedInFlight = 0;
  /** Requests this relay sent it since. */
  sent = 0;

  constructor(
    readonly machineId: string,
    readonly relayId: string,
    private readonly machines: RemoteMachines,
  ) {}

  get inFlight(): number {
    return this.announcedInFlight + this.sent;
  }

  /** Whether a stack's model is loaded there now (as a local link's `loaded`, from its relay's last announcement). */
  loaded(stackId: string): boolean {
    return this.readyStacks.has(stackId) && !this.unloadedStacks.has(stackId);
  }

  /** What the machine has free for one more model, as its relay last announced (see `AgentSession.roomToLoad`). */
  roomToLoad(): Room {
    return this.room;
  }

  infer(stackId: string, input: ChatInput, options: InferOptions = {}): AsyncGenerator<TokenEvent> {
    return this.machines.infer(this, stackId, input, options);
  }
}

/**
 * The machines linked to the other relays, from the snapshots each relay publishes on the bus, and the
 * requests this relay sends them through their relay: the sending side of a request crossing relays. The
 * answer streams back against credit (the relay serving it sends no more than it was granted, so a slow
 * client slows only its own request, up to the machine); the client going away cancels it there; errors
 * arrive as the serving relay's gateway would have answered them, and the tokens used last. A relay that
 * falls silent (no snapshot for 3.5 s) or the bus going down fails the requests in flight through it, which a
 * streaming client sees as `stream_incomplete`, and its machines are no longer routed to.
 */
export class RemoteMachines {
  private readonly byMachine = new Map<string, RemoteMachine>();
  private readonly relays = new Map<string, { seenAt: number; machines: Map<string, RemoteMachine> }>();
  /** Announcements in parts, per relay, until all parts of one came. */
  private readonly assembling = new Map<string, { seq: number; parts: (AnnouncedMachine[] | undefined)[]; got: number; since: number }>();
  private readonly calls = new Map<number, Call>();
  private seq = 0;
  private readonly sweep: NodeJS.Timeout;
  /** The direct connections whose closing is watched (once each). */
  private readonly watched = new WeakSet<PeerConnection>();
  /** Set once the relay's direct connections are made (joinFleet makes them after this). */
  peers: Peers | undefined;

  constructor(
    private readonly bus: FleetBus,
    private readonly relayId: string,
    private readonly log: Logger,
    /** The longest a request may wait in the serving relay's admission queue. */
    private readonly queueTimeoutMs = 30_000,
    /** The longest a `flex` request may wait there. */
    private readonly flexQueueTimeoutMs = 600_000,
  ) {
    bus.subscribe(SUBJECTS.machines, (m, subject, sender) => {
      const snapshot = readSnapshot(m);
      if (!snapshot || sender === relayId) return;
      // A relay announces the machines it holds, never another relay's.
      if (snapshot.relay !== sender) return bus.drop("impersonating", subject);
      this.received(snapshot);
    });
    bus.subscribe(SUBJECTS.replies(relayId), (m, subject, sender) => this.replied(Number(subject.slice(subject.lastIndexOf(".") + 1)), m, sender, subject));
    this.sweep = setInterval(() => {
      const now = performance.now();
      for (const [id, relay] of this.relays) if (now - relay.seenAt > SILENT_MS) this.dropRelay(id, "stopped answering");
      // An announcement whose parts stopped coming is not kept waiting for them.
      for (const [id, pending] of this.assembling) if (now - pending.since > SILENT_MS) this.assembling.delete(id);
    }, 500);
    this.sweep.unref();
  }

  /** The machine, when another relay holds its link. */
  get(machineId: string): RemoteMachine | undefined {
    return this.byMachine.get(machineId);
  }

  /** Whether a relay announced itself lately (an empty list counts): requests it sent are still read. */
  alive(relayId: string): boolean {
    return this.relays.has(relayId);
  }

  /** The other relays that announced themselves lately. */
  relayIds(): string[] {
    return [...this.relays.keys()];
  }

  /** Requests this relay has in flight through others (a stopping relay waits for them too). */
  get inFlight(): number {
    let n = 0;
    for (const call of this.calls.values()) if (!call.over) n++;
    return n;
  }

  /** The bus is down: no other relay can be reached, so nothing is routed to them and their requests fail. */
  disconnected(): void {
    for (const id of [...this.relays.keys()]) this.dropRelay(id, "cannot be reached: this relay lost its connection to NATS");
  }

  close(): void {
    clearInterval(this.sweep);
    this.disconnected();
  }

  /** Sends a request to the relay holding the machine's link and yields its answer. */
  async *infer(machine: RemoteMachine, stackId: string, input: ChatInput, options: InferOptions): AsyncGenerator<TokenEvent> {
    if (!this.bus.connected) throw unreachable("cannot be reached: this relay lost its connection to NATS");
    if (this.relays.get(machine.relayId)?.machines.get(machine.machineId) !== machine) throw unreachable("no longer holds it");
    assertEncodable(input);
    const n = ++this.seq;
    const via = this.peers?.open(machine.relayId);
    if (via && !this.watched.has(via)) {
      this.watched.add(via);
      via.onClose(() => this.connectionLost(via));
    }
    const call: Call = { relayId: machine.relayId, via, nextReply: 0, pending: new PendingInference(WINDOW), onUsage: options.onUsage, over: false, settled: false };
    this.calls.set(n, call);
    machine.sent++;
    const { signal } = options;
    const onAbort = () => call.pending.fail(MakinaError.from(signal?.reason ?? new DOMException("aborted", "AbortError")));
    signal?.addEventListener("abort", onAbort, { once: true });
    let finished = false;
    // The serving relay applies the first-token timeout (after its admission queue); this one only guards
    // against a relay that never answers.
    const firstTokenTimeoutMs = options.firstTokenTimeoutMs ?? 120_000;
    const silence = setTimeout(() => {
      if (!call.pending.started) call.pending.fail(new MakinaError("runtime_unavailable", "The relay holding this machine's link did not answer in time.", { retryAfterMs: 5000 }));
    }, firstTokenTimeoutMs + (input.serviceTier === "flex" ? this.flexQueueTimeoutMs : this.queueTimeoutMs) + 5000);
    silence.unref();
    try {
      if (signal?.aborted) onAbort();
      const request: HopRequest = {
        from: this.relayId,
        n,
        machine: machine.machineId,
        stack: stackId,
        input,
        firstTokenTimeoutMs,
        steps: options.steps ?? 1,
        credit: WINDOW,
      };
      // Direct when a connection to that relay is open (and the request is not larger than it takes), else NATS.
      if (!via?.send({ q: request })) call.via = undefined;
      if (!call.via && !this.bus.publish(SUBJECTS.hop(machine.relayId), request)) {
        // Larger than NATS takes (its max_payload), or NATS gone this very moment: it never left, so no usage
        // will come (and none is counted, as for a request refused here).
        call.settled = true;
        throw Buffer.byteLength(JSON.stringify(request)) + SEAL_BYTES > this.bus.maxPayload
          ? new MakinaError("request_too_large", `This request is too large to reach the relay holding its machine's link (NATS takes at most ${this.bus.maxPayload} bytes).`)
          : unreachable("cannot be reached: this relay lost its connection to NATS");
      }
      let unacknowledged = 0;
      for (;;) {
        const event = await call.pending.next();
        if (event.type === "end") finished = true;
        yield event;
        if (finished) return;
        if (++unacknowledged >= WINDOW >> 1) {
          this.control(call, { from: this.relayId, n, credit: unacknowledged });
          unacknowledged = 0;
        }
      }
    } finally {
      clearTimeout(silence);
      signal?.removeEventListener("abort", onAbort);
      machine.sent--;
      if (!finished) this.control(call, { from: this.relayId, n, cancel: true });
      this.over(n, call);
    }
  }

  /** Credit or cancellation, the way its request went. */
  private control(call: Call, message: { from: string; n: number; credit: number } | { from: string; n: number; cancel: true }): void {
    if (call.via) call.via.send({ c: message });
    else this.bus.publish(SUBJECTS.control(call.relayId), message);
  }

  /** An answer on a direct connection this relay dialed. */
  answered(connection: PeerConnection, m: unknown): void {
    const answer = readPeerAnswer(m);
    if (answer && this.calls.get(answer.n)?.via === connection) this.reply(answer.n, answer.reply);
  }

  /** A direct connection closed: the requests sent on it have lost their answers. */
  private connectionLost(connection: PeerConnection): void {
    for (const [n, call] of this.calls) {
      if (call.via !== connection) continue;
      call.pending.fail(unreachable("lost its connection to this relay"));
      this.settle(n, null);
    }
  }

  /** The answer is over: the tokens it used are awaited (a while), unless they came already or none will. */
  private over(n: number, call: Call): void {
    call.over = true;
    if (call.settled || !call.onUsage) return void this.forget(n, call);
    call.timer = setTimeout(() => this.settle(n, null), USAGE_WAIT_MS);
    call.timer.unref();
  }

  /** The tokens the request used (null: unknown), reported once; the call is forgotten once its answer is over too. */
  private settle(n: number, usage: Usage | null): void {
    const call = this.calls.get(n);
    if (!call || call.settled) return;
    call.settled = true;
    call.onUsage?.(usage);
    if (call.over) this.forget(n, call);
  }

  private forget(n: number, call: Call): void {
    clearTimeout(call.timer);
    if (this.calls.get(n) === call) this.calls.delete(n);
  }

  private replied(n: number, m: unknown, sender: string, subject: string): void {
    const replies = readReplies(m);
    const call = this.calls.get(n);
    // Over NATS only for the requests that went over NATS, and from the relay they went to.
    if (!replies || !call || call.via !== undefined) return;
    if (call.relayId !== sender) return this.bus.drop("impersonating", subject);
    for (const reply of replies) this.reply(n, reply);
  }

  private reply(n: number, reply: HopReply): void {
    const call = this.calls.get(n);
    if (!call) return;
    if (reply.s !== call.nextReply) {
      // A reply was lost (NATS dropped a connection meanwhile): the answer would miss words.
      call.pending.fail(unreachable("lost part of the answer on the way"));
      this.settle(n, null);
      return;
    }
    call.nextReply++;
    if ("e" in reply) call.pending.push(reply.e);
    else if ("err" in reply) {
      call.pending.fail(fromErrorReport(reply.err));
      // Refused before it ran: no usage will come (and none is counted, as for a request refused here).
      if (reply.noUsage) {
        call.settled = true;
        if (call.over) this.forget(n, call);
      }
    } else this.settle(n, reply.usage);
  }

  /** A part of a relay's announcement: applied once its parts are all there (a part lost: the next one will do). */
  private received(snapshot: MachinesSnapshot): void {
    if (snapshot.parts === undefined || snapshot.parts === 1) return this.apply(snapshot);
    let pending = this.assembling.get(snapshot.relay);
    if (!pending || pending.seq !== snapshot.seq || pending.parts.length !== snapshot.parts) {
      pending = { seq: snapshot.seq!, parts: Array.from({ length: snapshot.parts }, () => undefined), got: 0, since: performance.now() };
      this.assembling.set(snapshot.relay, pending);
    }
    if (pending.parts[snapshot.part!] === undefined) pending.got++;
    pending.parts[snapshot.part!] = snapshot.machines;
    if (pending.got < pending.parts.length) return;
    this.assembling.delete(snapshot.relay);
    this.apply({ relay: snapshot.relay, peer: snapshot.peer, machines: pending.parts.flat() as AnnouncedMachine[] });
  }

  private apply(snapshot: MachinesSnapshot): void {
    let relay = this.relays.get(snapshot.relay);
    if (!relay) {
      relay = { seenAt: 0, machines: new Map() };
      this.relays.set(snapshot.relay, relay);
      this.log.info("another relay is reachable", { relay: snapshot.relay, machines: snapshot.machines.length });
    }
    relay.seenAt = performance.now();
    // Dialed directly once known (a relay whose announcement never completes is not).
    if (snapshot.peer) this.peers?.know(snapshot.relay, snapshot.peer);
    const seen = new Set<string>();
    for (const [machineId, inFlight, congested, ready, unloaded, placeFree, freeBytes] of snapshot.machines) {
      seen.add(machineId);
      let machine = relay.machines.get(machineId);
      if (!machine) {
        machine = new RemoteMachine(machineId, snapshot.relay, this);
        relay.machines.set(machineId, machine);
      }
      // The relay that announced it last holds its link (a machine moving between relays).
      this.byMachine.set(machineId, machine);
      machine.announcedInFlight = inFlight;
      machine.congested = congested === 1;
      machine.readyStacks = new Set(ready);
      machine.unloadedStacks = new Set(unloaded);
      machine.room = unloaded ? { slot: placeFree === 1, bytes: freeBytes === -1 ? Infinity : (freeBytes ?? 0) } : { slot: true, bytes: 0 };
    }
    for (const [machineId, machine] of relay.machines) {
      if (seen.has(machineId)) continue;
      relay.machines.delete(machineId);
      if (this.byMachine.get(machineId) === machine) this.byMachine.delete(machineId);
    }
  }

  private dropRelay(relayId: string, why: string): void {
    const relay = this.relays.get(relayId);
    this.assembling.delete(relayId);
    if (!relay) return;
    this.relays.delete(relayId);
    this.peers?.forget(relayId);
    for (const [machineId, machine] of relay.machines) if (this.byMachine.get(machineId) === machine) this.byMachine.delete(machineId);
    let failed = 0;
    for (const [n, call] of this.calls) {
      if (call.relayId !== relayId) continue;
      failed++;
      call.pending.fail(unreachable(why));
      // Nobody knows what it used now.
      this.settle(n, null);
    }
    this.log.warn("another relay is unreachable: its machines are not routed to, its requests in flight failed", { relay: relayId, why, failed });
  }
}
