import { EventEmitter } from "node:events";
import type { AgentSession } from "./agent-session.js";

/** Events of the {@link AgentRegistry}. */
export interface RegistryEvents {
  online: [AgentSession];
}

/** The machines linked to a relay, and their stacks' models: loaded, or on demand and unloaded (the next request loads them). */
export interface LinkedModels {
  machines: number;
  loaded: number;
  unloaded: number;
}

/** The agents connected right now, one session per machine. */
export class AgentRegistry extends EventEmitter<RegistryEvents> {
  private readonly sessions = new Map<string, AgentSession>();

  /** Registers a new link; an older link of the same machine is ended. */
  add(session: AgentSession): void {
    const previous = this.sessions.get(session.machineId);
    this.sessions.set(session.machineId, session);
    if (previous && previous !== session) previous.end();
    this.emit("online", session);
  }

  /** Removes a link if it is still the machine's current one. Returns whether it was. */
  remove(session: AgentSession): boolean {
    if (this.sessions.get(session.machineId) !== session) return false;
    this.sessions.delete(session.machineId);
    return true;
  }

  get(machineId: string): AgentSession | undefined {
    return this.sessions.get(machineId);
  }

  /** Machines connected now. */
  get size(): number {
    return this.sessions.size;
  }

  all(): AgentSession[] {
    return [...this.sessions.values()];
  }

  /** The machines linked now, and their stacks' models that take requests: loaded, or unloaded on demand. */
  models(): LinkedModels {
    let loaded = 0;
    let unloaded = 0;
    for (const session of this.sessions.values()) {
      for (const stackId of session.readyStacks) {
        if (session.loaded(stackId)) loaded++;
        else unloaded++;
      }
    }
    return { machines: this.sessions.size, loaded, unloaded };
  }
}
