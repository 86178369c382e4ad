import type { EventType } from "./types.js";

type Listener = (type: EventType, data: Record<string, string>) => void;

/**
 * The page's one stream of relay events (`/admin/v1/events`, server-sent
 * events). The browser reconnects by itself; after a reconnect every listener
 * hears a "reconnected" so pages reload what they show.
 */
export class RelayEvents {
  private source: EventSource | undefined;
  private readonly listeners = new Set<Listener>();
  private wasOpen = false;
  /** True while the stream is connected (the UI shows a "live" mark). */
  connected = false;
  onConnectionChange: (connected: boolean) => void = () => {};

  start(): void {
    if (this.source) return;
    const source = new EventSource("/admin/v1/events");
    this.source = source;
    for (const type of ["machine", "stack", "key"] as const) {
      source.addEventListener(type, (e) => this.dispatch(type, JSON.parse((e as MessageEvent<string>).data) as Record<string, string>));
    }
    source.onopen = () => {
      if (this.wasOpen) for (const t of ["machine", "stack", "key"] as const) this.dispatch(t, {});
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

  subscribe(listener: Listener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private setConnected(connected: boolean): void {
    if (this.connected === connected) return;
    this.connected = connected;
    this.onConnectionChange(connected);
  }

  private dispatch(type: EventType, data: Record<string, string>): void {
    for (const l of this.listeners) l(type, data);
  }
}
