import { FAIR_SHARE_KEY_MAX, isServiceTier, MakinaError, toErrorReport, type Logger, type Usage } from "../../proto/index.js";
import { assertEncodable, type AgentRegistry, type AgentSession } from "../link/index.js";
import type { AdmissionGate, Admitted } from "../routing/index.js";
import type { FleetBus } from "./fleet-bus.js";
import { readControl, readRequest, SUBJECTS, type AnnouncedMachine, type HopControl, type HopReply, type HopRequest } from "./hop-messages.js";

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/** How often the relay looks whether its machines changed (published at once when they did), and the longest between two snapshots. */
const LOOK_MS = 200;
const REPEAT_MS = 1000;

/** Machines per announcement message: about 100 KB of JSON, far under NATS's 1 MiB message limit. */
const MACHINES_PER_PART = 1000;

/** A request from another relay being served here. */
interface Serving {
  from: string;
  /** The direct connection it came on (its answer goes back on it), or undefined when it came over NATS. */
  origin: object | undefined;
  /** When it arrived (`performance.now()`): a sender not heard of yet is given a few seconds to announce itself. */
  since: number;
  controller: AbortController;
  credit: number;
  wake: (() => void) | undefined;
}

/** How long the answer may wait for the sender's credit before the request is given up (its sender gone quiet). */
const CREDIT_WAIT_MS = 60_000;

/** How long a request's sender may go unannounced (it just started, or its announcements are late). */
const SENDER_GRACE_MS = 3500;

/** The refusal of requests whose sending relay is gone: nobody reads their answer. */
const senderGone = () => new MakinaError("canceled", "The relay that sent the request is gone.");

/**
 * The replies of one request over NATS, those made in one turn of the event loop sent as one message
 * (`{batch}`): a short answer's tokens, end and usage cross in one message, a stream's in one per frame of the
 * machine's link, each sealed once.
 */
function repliesOnBus(bus: FleetBus, subject: string): (reply: HopReply) => boolean {
  let pending: HopReply[] | undefined;
  return (reply) => {
    if (pending) {
      pending.push(reply);
      return true;
    }
    pending = [reply];
    setImmediate(() => {
      const batch = pending!;
      pending = undefined;
      // A batch larger than NATS takes goes a reply a message (each fits: the link held each to its size).
      if (batch.length === 1 || !bus.publish(subject, { batch })) for (const r of batch) bus.publish(subject, r);
    });
    return true;
  };
}

/**
 * A machine as this relay announces it: what routing here reads of its link, so the other relays rank its replicas as
 * this one does. Its unloaded on-demand stacks and its room to load one are sent only when it has such stacks (a
 * fleet of always-loaded models announces no more than before them).
 */
function announced(s: AgentSession): AnnouncedMachine {
  const ready = [...s.readyStacks];
  const unloaded = ready.filter((id) => !s.loaded(id));
  if (unloaded.length === 0) return [s.machineId, s.inFlight, s.congested ? 1 : 0, ready];
  const room = s.roomToLoad();
  const freeBytes = room.bytes === Infinity ? -1 : Math.min(Number.MAX_SAFE_INTEGER, Math.max(0, Math.floor(room.bytes)));
  return [s.machineId, s.inFlight, s.congested ? 1 : 0, ready, unloaded, room.slot ? 1 : 0, freeBytes];
}

/**
 * The serving side of requests crossing relays: this relay announces the machines whose links it holds (with
 * their ready stacks, which of those are unloaded and the room to load them, and requests in flight, so every relay
 * routes as this one would: to a loaded replica first, then to the least loaded machine of the fleet; looked at
 * every 200 ms, sent when any of it changed and every second regardless), and serves the requests other relays
 * send for them as its own gateway would: the machine's admission (requests in flight per stack and machine, and
 * the queue beyond) is applied here, where its count lives; the answer is sent only against the sender's credit,
 * and the sender's cancellation ends the request on the machine.
 */
export class HopServer {
  private readonly serving = new Map<string, Serving>();
  /** Set when the relay stops: it announces no machine any more and takes no new request from others. */
  private closing = false;
  private last = "";
  private lastAt = 0;
  private seq = 0;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly deps: {
      bus: FleetBus;
      relayId: string;
      registry: AgentRegistry;
      gate: AdmissionGate;
      log: Logger;
      /** Whether a relay still announces itself (every second): requests from one that stopped are ended. */
      relayAlive: (relayId: string) => boolean;
      /** Where this relay takes its peers' direct connections, announced with its machines. */
      peerAddress?: string;
    },
  ) {
    const { bus, relayId } = deps;
    // A relay sends its own requests, and credit or cancels its own requests only.
    bus.subscribe(SUBJECTS.hop(relayId), (m, subject, sender) => {
      const request = readRequest(m);
      if (!request) return;
      if (request.from !== sender) return bus.drop("impersonating", subject);
      void this.serve(request, repliesOnBus(bus, SUBJECTS.reply(request.from, request.n)), undefined);
    });
    bus.subscribe(SUBJECTS.control(relayId), (m, subject, sender) => {
      const control = readControl(m);
      if (!control) return;
      if (control.from !== sender) return bus.drop("impersonating", subject);
      this.control(control, undefined);
    });
    this.timer = setInterval(() => {
      this.announce();
      const now = performance.now();
      for (const call of this.serving.values()) if (now - call.since > SENDER_GRACE_MS && !deps.relayAlive(call.from)) call.controller.abort(senderGone());
    }, LOOK_MS);
    this.timer.unref();
    this.announce();
  }

  /**
   * Serves a request that came on a direct connection from its sender (`origin`), its answer sent with `send`;
   * the connection closing ends it.
   */
  serveDirect(request: HopRequest, send: (reply: HopReply) => boolean, origin: object): void {
    void this.serve(request, send, origin);
  }

  /** A request's credit or cancellation, from its sender (on the connection the request came on, or over NATS). */
  control(control: HopControl, origin: object | undefined): void {
    const call = this.serving.get(`${control.from}.${control.n}`);
    if (!call || call.origin !== origin) return;
    if ("cancel" in control) call.controller.abort(new MakinaError("canceled", "The client closed the connection."));
    else {
      call.credit += control.credit;
      call.wake?.();
    }
  }

  /** A direct connection closed: nobody reads the answers of the requests that came on it. */
  originGone(origin: object): void {
    for (const call of this.serving.values()) if (call.origin === origin) call.controller.abort(senderGone());
  }

  /** Requests from other relays being served now. */
  get inFlight(): number {
    return this.serving.size;
  }

  /** Publishes this relay's machines when they changed, and every second regardless (so others know it lives). */
  announce(force = false): void {
    const machines: AnnouncedMachine[] = [];
    if (!this.closing) for (const s of this.deps.registry.all()) if (s.state === "open") machines.push(announced(s));
    const text = JSON.stringify(machines);
    const now = performance.now();
    if (!force && text === this.last && now - this.lastAt < REPEAT_MS) return;
    this.last = text;
    this.lastAt = now;
    const seq = this.seq++;
    const parts = Math.max(1, Math.ceil(machines.length / MACHINES_PER_PART));
    for (let part = 0; part < parts; part++) {
      const slice = machines.slice(part * MACHINES_PER_PART, (part + 1) * MACHINES_PER_PART);
      this.deps.bus.publish(SUBJECTS.machines, { relay: this.deps.relayId, ...(this.deps.peerAddress ? { peer: this.deps.peerAddress } : {}), machines: slice, seq, part, parts });
    }
  }

  /**
   * The relay is stopping: it tells the others it holds no machine any more (so they route elsewhere) and
   * takes no new request; those it serves go on while the relay drains.
   */
  drain(): void {
    this.closing = true;
    this.announce(true);
  }

  /** Stops announcing and ends the requests it still serves. */
  close(): void {
    this.drain();
    clearInterval(this.timer);
    this.endAll(new MakinaError("machine_offline", "The relay holding this machine's link stopped.", { retryAfterMs: 1000 }));
  }

  /** Ends every request served for others (by default: this relay lost NATS, their answers cannot reach them). */
  endAll(why: MakinaError = senderGone()): void {
    for (const call of this.serving.values()) call.controller.abort(why);
  }

  private async serve(request: HopRequest, send: (reply: HopReply) => boolean, origin: object | undefined): Promise<void> {
    const { registry, gate, log } = this.deps;
    let seq = 0;
    const reply = (m: DistributiveOmit<HopReply, "s">) => send({ s: seq++, ...m } as HopReply);
    const key = `${request.from}.${request.n}`;
    // A request number that is in use already (sent twice, or by a relay posing as another): the first keeps it.
    if (this.serving.has(key)) return;
    const call: Serving = { from: request.from, origin, since: performance.now(), controller: new AbortController(), credit: request.credit, wake: undefined };
    this.serving.set(key, call);
    const { signal } = call.controller;
    signal.addEventListener("abort", () => call.wake?.(), { once: true });
    let place: Admitted | undefined;
    let ran = false;
    try {
      const session = this.closing ? undefined : registry.get(request.machine);
      if (!session || session.state !== "open") throw new MakinaError("machine_offline", "Every machine serving this model is offline.", { retryAfterMs: 5000 });
      // Checked by the relay that took it from its client; checked here too, as the link would end over it.
      assertEncodable(request.input);
      // In the order of the tier and key the relay that took it from its client said (a tier not known: `default`).
      const { serviceTier, fairShareKey } = request.input;
      const ask = { tier: isServiceTier(serviceTier) ? serviceTier : ("default" as const), owner: typeof fairShareKey === "string" ? fairShareKey.slice(0, FAIR_SHARE_KEY_MAX) : "" };
      place = gate.tryEnter(request.stack, request.machine, ask.tier === "flex") ?? (await gate.wait(request.stack, request.machine, signal, ask));
      // The machine gets the tier and key as this relay took them, whatever the other relay sent.
      const input = { ...request.input, serviceTier: ask.tier, fairShareKey: ask.owner };
      // Checked again with nothing awaited before the request starts on the link: from here its usage always comes.
      if (session.state !== "open") throw new MakinaError("machine_offline", "Every machine serving this model is offline.", { retryAfterMs: 5000 });
      const events = session.infer(request.stack, input, {
        signal,
        firstTokenTimeoutMs: request.firstTokenTimeoutMs,
        steps: request.steps,
        onUsage: (usage: Usage | null) => reply({ usage }),
      });
      ran = true;
      for await (const event of events) {
        while (call.credit <= 0) {
          if (signal.aborted) throw MakinaError.from(signal.reason);
          const timer = setTimeout(() => call.controller.abort(new MakinaError("timeout", "The relay that sent the request stopped reading its answer.")), CREDIT_WAIT_MS);
          await new Promise<void>((resolve) => (call.wake = resolve));
          clearTimeout(timer);
          call.wake = undefined;
        }
        call.credit--;
        reply({ e: event });
      }
    } catch (err) {
      const e = MakinaError.from(err);
      if (e.code !== "canceled") log.debug("a request from another relay failed", { from: request.from, machine: request.machine, code: e.code });
      reply(ran ? { err: toErrorReport(e) } : { err: toErrorReport(e), noUsage: true });
    } finally {
      place?.release();
      if (this.serving.get(key) === call) this.serving.delete(key);
    }
  }
}
