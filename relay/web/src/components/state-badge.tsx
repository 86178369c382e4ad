const TONES: Record<string, string> = {
  online: "good",
  deployed: "good",
  ready: "good",
  active: "good",
  succeeded: "good",
  ok: "good",
  pending: "wait",
  deploying: "wait",
  undeploying: "wait",
  running: "wait",
  loading: "wait",
  warn: "wait",
  offline: "off",
  draft: "off",
  revoked: "off",
  expired: "off",
  disabled: "off",
  blocked: "bad",
  failed: "bad",
  fail: "bad",
  unverified: "wait",
  // An on-demand stack's model unloaded (or loading): it serves, its next request loads it.
  idle: "off",
};

/** A machine's, stack's, key's or step's state as a coloured label. */
export function StateBadge({ state, label }: { state: string; label?: string }) {
  return (
    <span class={`badge ${TONES[state] ?? "off"}`} data-state={state}>
      <span class="dot" aria-hidden="true" />
      {label ?? state}
    </span>
  );
}

/** Marks an http(s):// model with no SHA-256 pinned: the machine serves whatever file the server sends. */
export function UnverifiedBadge() {
  return (
    <span title="No SHA-256 is pinned for this model: the machine serves whatever file the server sends. Pin one when creating the stack." data-testid="model-unverified">
      {" "}
      <StateBadge state="unverified" />
    </span>
  );
}
