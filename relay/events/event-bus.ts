/**
 * What changed in the control plane, for live pages and `stack deploy --wait`:
 * a listener fetches the resource again. Every event names its organization,
 * so a stream shows a user only its own organization's changes.
 */
export type RelayEvent =
  /** A machine came online, went offline, or reported new hardware. */
  | { type: "machine"; orgId: string; machineId: string }
  /** A stack changed state, a deploy step moved (progress included), or its runtime's state changed. */
  | { type: "stack"; orgId: string; stackId: string }
  /** An API key was created or revoked; `*`: the organization's default key limits changed. */
  | { type: "key"; orgId: string; keyId: string };

type Listener = (event: RelayEvent) => void;

/** One typed in-process bus for the relay's change events. A throwing listener never stops the others. */
export class EventBus {
  private readonly listeners = new Set<Listener>();
  private readonly closers = new Set<() => void>();

  /**
   * Subscribes; returns the function that unsubscribes. `onClose` runs when the
   * relay stops, so a long-lived subscriber (an event stream) ends at once.
   */
  subscribe(listener: Listener, onClose?: () => void): () => void {
    this.listeners.add(listener);
    if (onClose) this.closers.add(onClose);
    return () => {
      this.listeners.delete(listener);
      if (onClose) this.closers.delete(onClose);
    };
  }

  /** The relay is stopping: every subscriber's `onClose` runs. */
  close(): void {
    for (const close of [...this.closers]) close();
    this.closers.clear();
    this.listeners.clear();
  }

  emit(event: RelayEvent): void {
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch {
        // A broken listener (a closed stream) must not break the control plane.
      }
    }
  }

  get listenerCount(): number {
    return this.listeners.size;
  }
}
