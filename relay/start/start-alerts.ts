import { AlertSender, AlertWatch, type WebhookReach } from "../alerts/index.js";
import type { AlertDeps } from "../control/alerts.js";
import type { Limiter } from "../limits/index.js";
import type { Store } from "../store/index.js";
import type { UsageRecorder } from "../usage/index.js";
import type { Vault } from "../vault/index.js";
import type { Shared } from "./relay-parts.js";

/** A runtime that failed on a machine linked here: an event for the webhooks that want it (once per 10 minutes a stack). */
export type RuntimeFailed = (orgId: string, machine: { id: string; name: string }, stackId: string, error: string | null) => void;

/**
 * The alerts: the sender of the organizations' webhook deliveries (their secrets sealed in the vault) and the
 * watch that looks for events every `alertsCheckMs`; both stop before the database closes.
 */
export async function startAlerts(s: Shared, d: { store: Store; vault: Vault; limiter: Limiter; usage: UsageRecorder }): Promise<{ deps: AlertDeps; runtimeFailed: RuntimeFailed }> {
  const { config, log, parts } = s;
  const { store, vault, limiter, usage } = d;
  const secrets = vault.shelf("alert_secret");
  const reach: WebhookReach = { allowPrivate: config.alertsAllowPrivate };
  const alertLog = log.child({ component: "alerts" });
  const sender = await parts.start({
    name: "the alerts' deliveries",
    start: () => {
      const sender = new AlertSender({ store: store.alerts, secrets, log: alertLog, reach, firstRetryMs: config.alertsFirstRetryMs });
      sender.start();
      return sender;
    },
    stop: (sender) => sender.stop(),
  });
  const watch = await parts.start({
    name: "the alerts' watch",
    start: () => {
      const watch = new AlertWatch({ store, spent: (line) => limiter.spent(line), requestsSince: (orgId, since) => usage.requestsSince(orgId, since), emit: (e) => sender.emit(e), log: alertLog });
      watch.start(config.alertsCheckMs);
      return watch;
    },
    stop: (watch) => watch.stop(),
  });
  // A request a budget refused says it is spent, at once (the watch finds budgets past 80% and 100% by itself).
  limiter.budgetExhausted = (line) => watch.exhausted(line);
  const runtimeFailed: RuntimeFailed = (orgId, machine, stackId, error) => {
    const at = Date.now();
    void sender
      .emit({
        id: `runtime.failed:${stackId}:${Math.floor(at / 600_000)}`,
        type: "runtime.failed",
        orgId,
        data: { stack_id: stackId, machine_id: machine.id, machine_name: machine.name, error },
        text: `Makina: the runtime of stack ${stackId} failed on machine ${machine.name}${error ? `: ${error.slice(0, 300)}` : ""}. Its requests answer 503 until it is ready again.`,
      })
      .catch((err: unknown) => alertLog.warn("a runtime's failure could not be queued as an alert", { error: String(err) }));
  };
  return { deps: { sender, secrets, reach }, runtimeFailed };
}
