import { useEffect, useRef, useState } from "preact/hooks";
import type { ApiError } from "../../api/admin-client.js";
import type { Compatibility, RuntimeKind } from "../../api/types.js";
import { useApp } from "../../app-context.js";

/** The Forge's choices, as the compatibility check takes them (its organization is the session's). */
export interface CompatibilityAsk {
  machine: string;
  runtime: RuntimeKind;
  model: string;
  harness: string | null;
  orchestrator: string | null;
  endpoint: boolean;
  /** Tokens of context asked; null: the machine's default. */
  max_context: number | null;
  /** An on-demand stack is judged by whether it fits the machine's memory budget alone. */
  residency: "always" | "on_demand";
  /** The stack being edited: what it counts on its machine is not one of the others'. */
  stack: string | null;
}

/**
 * The compatibility panel's answer for the choices as they are: the first look at once, then one per pause while
 * the choices change (typing a reference); an answer that comes after a newer question is dropped. Nothing is
 * asked without a machine.
 */
export function useCompatibility(ask: CompatibilityAsk): { result: Compatibility | null; pending: boolean } {
  const { client, session } = useApp();
  const [compat, setCompat] = useState<{ result: Compatibility | null; pending: boolean }>({ result: null, pending: false });
  const seq = useRef(0);
  const { machine, runtime, model, harness, orchestrator, endpoint, max_context, residency, stack } = ask;
  useEffect(() => {
    if (!machine) return;
    const pause = seq.current === 0 ? 0 : 150;
    const mine = ++seq.current;
    setCompat((c) => ({ ...c, pending: true }));
    const timer = setTimeout(() => {
      client
        .call("POST /admin/v1/compatibility", { body: { org: session.org.id, machine, runtime, model, harness, orchestrator, endpoint, max_context, residency, ...(stack && { stack }) } })
        .then(
          (result) => mine === seq.current && setCompat({ result, pending: false }),
          (e: ApiError) =>
            mine === seq.current && setCompat({ result: { ok: false, checks: [{ topic: "runtime", param: "runtime", level: "fail", message: e.message }], serves: [] }, pending: false }),
        );
    }, pause);
    return () => clearTimeout(timer);
  }, [client, session.org.id, machine, runtime, model, harness, orchestrator, endpoint, max_context, residency, stack]);
  return compat;
}
