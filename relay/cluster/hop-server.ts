import { MakinaError, toErrorReport, type Logger, type Usage } from "../../proto/index.js";
import type { AgentRegistry } from "../link/index.js";
import type { AdmissionGate, Admitted } from "../routing/index.js";
import type { FleetBus } from "./fleet-bus.js";
import { readControl, readRequest, SUBJECTS, type AnnouncedMachine, type HopReply, type HopRequest } from "./hop-messages.js";

/** How often the relay looks whether its machines changed (published at once when they did), and the longest between two snapshots. */
const LOOK_MS = 200;
const REPEAT_MS = 1000;

/** A request from another relay being served here. */
interface Serving {
  controller: AbortController;
  credit: number;
  wake: (() => void) | undefined;
}

/**
 * The serving side of requests crossing relays: this relay announces the machines whose links it holds (with
 * their ready stacks and requests in flight, so every relay routes to the least loaded machine of the fleet),
 * and serves the requests other relays send for them as its own gateway would: the machine's admission
 * (requests in flight per stack and machine, and the queue beyond) is applied here, where its count lives;
 * the answer is sent only against the sender's credit, and the sender's cancellation ends the request on the
 * machine.
 */
export class HopServer {
  private readonly serving = new Map<string, Serving>();
  private last = "";
  private lastAt = 0;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly deps: { bus: FleetBus; relayId: string; registry: AgentRegistry; gate: AdmissionGate; log: Logger },
  ) {
    const { bus, relayId } = deps;
    bus.subscribe(SUBJECTS.hop(relayId), (m) => {
      const request = readRequest(m);
      if (request) void this.serve(request);
    });
    bus.subscribe(SUBJECTS.control(relayId), (m) => {
      const control = readControl(m);
      const call = control && this.serving.get(`${control.from}.${control.n}`);
      if (!control || !call) return;
      if ("cancel" in control) call.controller.abort(new MakinaError("canceled", "The client closed the connection."));
      else {
        call.credit += control.credit;
        call.wake?.();
      }
    });
    this.timer = setInterval(() => this.announce(), LOOK_MS);
    this.timer.unref();
    this.announce();
  }

  /** Requests from other relays being served now. */
  get inFlight(): number {
    return this.serving.size;
  }

  /** Publishes this relay's machines when they changed, and every second regardless (so others know it lives). */
  announce(force = false): void {
    const machines: AnnouncedMachine[] = [];
    for (const s of this.deps.registry.all()) if (s.state === "open") machines.push([s.machineId, s.inFlight, s.congested ? 1 : 0, [...s.readyStacks]]);
    const text = JSON.stringify(machines);
    const now = performance.now();
    if (!force && text === this.last && now - this.lastAt < REPEAT_MS) return;
    this.last = text;
    this.lastAt = now;
    this.deps.bus.publish(SUBJECTS.machines, { relay: this.deps.relayId, machines });
  }

  /** Stops announcing and ends the requests it serves. */
  close(): void {
    clearInterval(this.timer);
    for (const call of this.serving.values()) call.controller.abort(new MakinaError("canceled", "The relay is stopping."));
  }

  private async serve(request: HopRequest): Promise<void> {
    const { bus, registry, gate, log } = this.deps;
    const replyTo = SUBJECTS.reply(request.from, request.n);
    const reply = (m: HopReply) => bus.publish(replyTo, m);
    const key = `${request.from}.${request.n}`;
    const call: Serving = { controller: new AbortController(), credit: request.credit, wake: undefined };
    this.serving.set(key, call);
    const { signal } = call.controller;
    signal.addEventListener("abort", () => call.wake?.(), { once: true });
    let place: Admitted | undefined;
    let ran = false;
    try {
      const session = registry.get(request.machine);
      if (!session || session.state !== "open") throw new MakinaError("machine_offline", "Every machine serving this model is offline.", { retryAfterMs: 5000 });
      place = gate.tryEnter(request.stack, request.machine) ?? (await gate.wait(request.stack, request.machine, signal));
      // Checked again with nothing awaited before the request starts on the link: from here its usage always comes.
      if (session.state !== "open") throw new MakinaError("machine_offline", "Every machine serving this model is offline.", { retryAfterMs: 5000 });
      const events = session.infer(request.stack, request.input, {
        signal,
        firstTokenTimeoutMs: request.firstTokenTimeoutMs,
        steps: request.steps,
        onUsage: (usage: Usage | null) => reply({ usage }),
      });
      ran = true;
      for await (const event of events) {
        while (call.credit <= 0) {
          if (signal.aborted) throw MakinaError.from(signal.reason);
          await new Promise<void>((resolve) => (call.wake = resolve));
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
      this.serving.delete(key);
    }
  }
}
