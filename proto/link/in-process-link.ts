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
    let relay: LinkEnd<AgentToRelay> | undefined;
    const closeBoth = (reason: string, refused?: LinkRefusal) => {
      if (!open) return;
      open = false;
      queueMicrotask(() => {
        agent.close(reason, refused);
        relay?.close(reason);
      });
    };
    relay = accept(credentials, {
      send: (message) => open && queueMicrotask(() => agent.send(message)),
      close: closeBoth,
    });
    const toRelay = relay;
    return {
      send: (message) => open && queueMicrotask(() => toRelay.send(message)),
      close: closeBoth,
    };
  };
}
