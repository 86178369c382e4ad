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
  failed: "bad",
  fail: "bad",
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
