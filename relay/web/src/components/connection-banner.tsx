import { useEffect, useState } from "preact/hooks";
import type { RelayEvents } from "../api/event-stream.js";

/** A drop shorter than this (a reconnect) is not worth a banner. */
const GRACE_MS = 2000;
/** How long "connected again" stays. */
const BACK_MS = 5000;

/**
 * Says when the live connection to the relay drops (pages stop updating and may be out of date) and when it
 * comes back (they were read again).
 */
export function ConnectionBanner({ events }: { events: RelayEvents }) {
  const [shown, setShown] = useState<"none" | "lost" | "back">("none");
  useEffect(() => {
    let lostTimer: ReturnType<typeof setTimeout> | undefined;
    let backTimer: ReturnType<typeof setTimeout> | undefined;
    let lost = false;
    const unsubscribe = events.onConnection((connected) => {
      clearTimeout(lostTimer);
      clearTimeout(backTimer);
      if (!connected) {
        lostTimer = setTimeout(() => {
          lost = true;
          setShown("lost");
        }, GRACE_MS);
        return;
      }
      if (!lost) return;
      lost = false;
      setShown("back");
      backTimer = setTimeout(() => setShown("none"), BACK_MS);
    });
    return () => {
      unsubscribe();
      clearTimeout(lostTimer);
      clearTimeout(backTimer);
    };
  }, [events]);
  if (shown === "none") return null;
  return shown === "lost" ? (
    <div class="connection-banner lost" role="alert" data-testid="connection-banner">
      The connection to the relay is lost. Reconnecting… What this page shows may be out of date.
    </div>
  ) : (
    <div class="connection-banner back" role="status" data-testid="connection-banner">
      Connected to the relay again: this page is up to date.
    </div>
  );
}
