import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { useApp } from "../app-context.js";
import type { ApiError } from "./admin-client.js";
import type { AdminEvent, AdminEventType } from "./types.js";

/** The state of data loaded from the relay and kept up to date by its events. */
export interface Live<T> {
  data: T | undefined;
  error: ApiError | undefined;
  loading: boolean;
  reload: () => void;
}

/**
 * Loads data and loads it again whenever the relay announces a change of one of
 * `on` (and `match` accepts the event; after a reconnect, always), coalescing
 * bursts (download progress) into at most one load in flight plus one queued.
 */
export function useLive<T>(load: () => Promise<T>, on: AdminEventType[], deps: unknown[], match?: (event: AdminEvent) => boolean): Live<T> {
  const { events } = useApp();
  const [state, setState] = useState<{ data?: T; error?: ApiError; loading: boolean }>({ loading: true });
  const inFlight = useRef(false);
  const queued = useRef(false);
  const alive = useRef(true);
  // Bumped when the deps change: a load started for the previous ones is not shown.
  const generation = useRef(0);
  const loadRef = useRef(load);
  loadRef.current = load;

  const run = useCallback(() => {
    if (inFlight.current) {
      queued.current = true;
      return;
    }
    inFlight.current = true;
    const started = generation.current;
    const current = () => alive.current && started === generation.current;
    loadRef
      .current()
      .then(
        (data) => current() && setState({ data, loading: false }),
        (error: ApiError) => current() && setState((s) => ({ data: s.data, error, loading: false })),
      )
      .finally(() => {
        inFlight.current = false;
        if (queued.current && alive.current) {
          queued.current = false;
          run();
        }
      });
  }, []);

  useEffect(() => {
    alive.current = true;
    generation.current++;
    setState({ loading: true });
    run();
    const unsubscribe = events.subscribe((type, event) => {
      if (on.includes(type) && (!match || event === null || match(event))) run();
    });
    return () => {
      alive.current = false;
      unsubscribe();
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, deps);

  return { data: state.data, error: state.error, loading: state.loading, reload: run };
}
