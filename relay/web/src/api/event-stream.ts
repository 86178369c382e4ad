import type { AdminEvent, AdminEventType } from "./types.js";

/** Hears one event of the stream, or `null` after a reconnect: changes may have been missed, so reload. */
type Listener = (type: AdminEventType, event: AdminEvent | null) => void;

const TYPES: readonly AdminEventType[] = ["machine", "stack", "key"];

/**
 * The page's one stream of relay events (`/admin/v1/events`, server-sent
 * events). The browser reconnects by itself; after a reconnect every listener
 * hears each type with no event, so pages reload what they show.
 */
export class RelayEvents {
  private source: EventSource | undefined;
  private readonly listeners = new Set<Listener>();
  private wasOpen = false;
  private readonly connectionListeners = new Set<(connected: boolean) => void>();
  /** True while the stream is connected (the UI shows a "live" mark). */
  connected = false;

  start(): void {
    if (this.source) return;
    const source = new EventSource("/admin/v1/events");
    this.source = source;
    for (const type of TYPES) {
      source.addEventListener(type, (e) => this.dispatch(type, { event: type, data: JSON.parse((e as MessageEvent<string>).data) } as AdminEvent));
    }
    source.onopen = () => {
      if (this.wasOpen) for (const type of TYPES) this.dispatch(type, null);
      this.wasOpen = true;
      this.setConnected(true);
    };
    source.onerror = () => this.setConnected(false);
  }

  stop(): void {
    this.source?.close();
    this.source = undefined;
    this.wasOpen = false;
    this.setConnected(false);
  }

  /** Hears every change of the connection's state. */
  onConnection(listener: (connected: boolean) => void): () => void {
    this.connectionListeners.add(listener);
    return () => this.connectionListeners.delete(listener);
  }

  subscribe(listener: Listener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private setConnected(connected: boolean): void {
    if (this.connected === connected) return;
    this.connected = connected;
    for (const l of this.connectionListeners) l(connected);
  }

  private dispatch(type: AdminEventType, event: AdminEvent | null): void {
    for (const l of this.listeners) l(type, event);
  }
}
