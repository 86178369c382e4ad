import type { AgentToRelay, LinkAcceptor, LinkCredentials, LinkDialer, LinkEnd, LinkRefusal } from "./link-messages.js";

/**
 * A link inside one process (relay and agent together, as `makina up` runs them): messages are handed
 * over as they are, with nothing encoded, in order and each in its own microtask, as a network would
 * deliver them (a side never runs inside the other's `send`). Messages sent before `close` arrive before
 * it and nothing after it; when either side closes, both ends are told, as both ends of a connection are.
 */
export function inProcessDialer(accept: LinkAcceptor, credentials: LinkCredentials): LinkDialer {
  return (agent) => {
    let open = true;
    // Runs in a microtask, so even a refusal from inside `accept` finds `relay` assigned.
    const closeBoth = (reason: string, refused?: LinkRefusal) => {
      if (!open) return;
      open = false;
      queueMicrotask(() => {
        agent.close(reason, refused);
        relay.close(reason);
      });
    };
    const deliver = <M>(to: LinkEnd<M>) => (message: M) => {
      if (open) queueMicrotask(() => to.send(message));
    };
    const relay: LinkEnd<AgentToRelay> = accept(credentials, { send: deliver(agent), close: closeBoth });
    return { send: deliver(relay), close: closeBoth };
  };
}
