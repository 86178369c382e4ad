import type { Logger } from "../../proto/index.js";
import { periodOf, type BudgetLine } from "../limits/index.js";
import type { AlertWebhook, Store } from "../store/index.js";
import type { AlertEvent, AlertEventType } from "./alert-events.js";

/** What the watch reads and where its events go. */
export interface AlertWatchDeps {
  store: Store;
  /** Tokens a budget line used this period (the gateway's count). */
  spent: (line: BudgetLine) => Promise<number>;
  /** Requests and errors of an organization since a time (the usage counts). */
  requestsSince: (orgId: string, since: number) => Promise<{ requests: number; errors: number }>;
  emit: (event: AlertEvent) => Promise<number>;
  log: Logger;
  now?: () => number;
}

/** An error rate counts only over at least this many requests in its 5 minutes. */
const ERROR_RATE_MIN_REQUESTS = 20;
const FIVE_MINUTES = 300_000;
/** An error rate that stays high is said again at most this often. */
const ERROR_RATE_EVERY_MS = 3_600_000;

/**
 * Looks, every few seconds, for what the organizations' webhooks want to hear of that no single request tells:
 * machines offline longer than a webhook's grace, budgets past 80% and 100% of their period, error rates over a
 * webhook's threshold for 5 minutes, keys that expire within a day. Every relay looks; the events' ids make one
 * delivery of each. (A runtime that fails is told by the relay its machine is linked to, as it happens.)
 */
export class AlertWatch {
  private timer: NodeJS.Timeout | undefined;
  private looking: Promise<void> | undefined;
  private readonly now: () => number;
  /** Budgets a refusal said spent, this period, on this relay (the event's id makes one delivery across relays). */
  private readonly told = new Set<string>();

  constructor(private readonly d: AlertWatchDeps) {
    this.now = d.now ?? Date.now;
  }

  start(everyMs: number): void {
    this.timer = setInterval(() => void this.look(), everyMs).unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.looking;
  }

  /** One look at every organization with webhooks (a look under way is not started twice). */
  look(): Promise<void> {
    this.looking ??= this.lookNow()
      .catch((err: unknown) => this.d.log.warn("alerts could not look for events", { error: String(err) }))
      .finally(() => (this.looking = undefined));
    return this.looking;
  }

  private lastPrune = 0;

  private async lookNow(): Promise<void> {
    // Deliveries done (delivered or failed) are kept a month, then forgotten: looked for once an hour.
    if (this.now() - this.lastPrune > 3_600_000) {
      this.lastPrune = this.now();
      await this.d.store.alerts.prune(this.now() - 30 * 86_400_000);
    }
    const byOrg = new Map<string, AlertWebhook[]>();
    for (const w of await this.d.store.alerts.list(null)) byOrg.set(w.orgId, [...(byOrg.get(w.orgId) ?? []), w]);
    for (const [orgId, webhooks] of byOrg) {
      const wants = (type: AlertEventType) => webhooks.filter((w) => w.events.includes(type));
      if (wants("machine.offline").length) await this.machines(orgId, wants("machine.offline"));
      if (wants("budget.threshold").length) await this.budgets(orgId);
      if (wants("error_rate").length) await this.errorRate(orgId, wants("error_rate"));
      if (wants("key.expiring").length) await this.expiring(orgId);
    }
  }

  /** A machine offline (not revoked) for longer than a webhook's grace: once per time it went offline. */
  private async machines(orgId: string, webhooks: AlertWebhook[]): Promise<void> {
    const now = this.now();
    const grace = Math.min(...webhooks.map((w) => w.machineOfflineAfterS)) * 1000;
    for (const m of await this.d.store.machines.listByOrg(orgId)) {
      if (m.state !== "offline" || m.revokedAt !== null || m.lastSeenAt === null || now - m.lastSeenAt < grace) continue;
      // Offline for more than a day: it was told then (or the relays were all down); not news now.
      if (now - m.lastSeenAt > 86_400_000) continue;
      const minutes = Math.round((now - m.lastSeenAt) / 60_000);
      await this.d.emit({
        id: `machine.offline:${m.id}:${m.lastSeenAt}`,
        type: "machine.offline",
        orgId,
        data: { machine_id: m.id, machine_name: m.name, offline_since: new Date(m.lastSeenAt).toISOString() },
        text: `Makina: machine ${m.name} (${m.id}) has been offline since ${new Date(m.lastSeenAt).toISOString()} (${minutes} min); its stacks answer 503 until it is back.`,
      });
    }
  }

  /** A key's or the organization's budget past 80% and 100% of its period: once each per period. */
  private async budgets(orgId: string): Promise<void> {
    const now = this.now();
    const org = await this.d.store.orgs.find(orgId);
    const lines: { line: BudgetLine; name: string }[] = [];
    if (org?.budget) lines.push({ line: { scope: "org", id: org.id, orgId, ...org.budget }, name: `the organization ${org.name}` });
    for (const k of await this.d.store.keys.listActive(orgId)) {
      if (k.budget) lines.push({ line: { scope: "key", id: k.id, orgId, ...k.budget }, name: `key ${k.name ?? k.prefix} (${k.id})` });
    }
    for (const { line, name } of lines) {
      const spent = await this.d.spent(line);
      for (const percent of [100, 80] as const) {
        if (spent < (line.tokens * percent) / 100) continue;
        await this.budgetEvent(line, name, spent, percent);
        break;
      }
    }
  }

  /**
   * A request refused for a budget: it is spent, as far as requests can tell (what is left is less than a
   * request needs), whether or not every token of it is. Said once a period, at once.
   */
  exhausted(line: BudgetLine): void {
    const { start } = periodOf(line.period, this.now());
    const id = `${line.scope}:${line.id}:${line.period}:${start}`;
    if (this.told.has(id)) return;
    if (this.told.size > 10_000) this.told.clear();
    this.told.add(id);
    void (async () => {
      const key = line.scope === "key" ? await this.d.store.keys.findById(line.id) : undefined;
      const name = line.scope === "org" ? "the organization" : `key ${key?.name ?? key?.prefix ?? ""} (${line.id})`;
      await this.budgetEvent(line, name, await this.d.spent(line), 100);
    })().catch((err: unknown) => this.d.log.warn("a spent budget could not be queued as an alert", { error: String(err) }));
  }

  private budgetEvent(line: BudgetLine, name: string, spent: number, percent: 80 | 100): Promise<number> {
    const { start, end } = periodOf(line.period, this.now());
    return this.d.emit({
      id: `budget.threshold:${line.scope}:${line.id}:${line.period}:${start}:${percent}`,
      type: "budget.threshold",
      orgId: line.orgId,
      data: { scope: line.scope, id: line.id, percent, spent, tokens: line.tokens, period: line.period, renews_at: new Date(end).toISOString() },
      text:
        percent === 100
          ? `Makina: the token budget of ${name} is spent (${spent} of ${line.tokens} this ${line.period}); its requests are refused until ${new Date(end).toISOString()}.`
          : `Makina: ${name} has used ${Math.floor((spent / line.tokens) * 100)}% of its token budget (${spent} of ${line.tokens} this ${line.period}).`,
    });
  }

  /** Requests failing above a webhook's threshold over the last 5 minutes: at most once an hour. */
  private async errorRate(orgId: string, webhooks: AlertWebhook[]): Promise<void> {
    const now = this.now();
    const { requests, errors } = await this.d.requestsSince(orgId, now - FIVE_MINUTES);
    if (requests < ERROR_RATE_MIN_REQUESTS) return;
    const percent = (errors / requests) * 100;
    if (percent < Math.min(...webhooks.map((w) => w.errorRatePercent))) return;
    await this.d.emit({
      id: `error_rate:${orgId}:${Math.floor(now / ERROR_RATE_EVERY_MS)}`,
      type: "error_rate",
      orgId,
      data: { requests, errors, percent: Math.round(percent * 10) / 10, minutes: 5 },
      text: `Makina: ${errors} of ${requests} requests failed in the last 5 minutes (${percent.toFixed(1)}%).`,
    });
  }

  /** A key that stops working within a day: once per expiry. */
  private async expiring(orgId: string): Promise<void> {
    const now = this.now();
    for (const k of await this.d.store.keys.listActive(orgId)) {
      if (k.expiresAt === null || k.expiresAt <= now || k.expiresAt - now > 86_400_000) continue;
      await this.d.emit({
        id: `key.expiring:${k.id}:${k.expiresAt}`,
        type: "key.expiring",
        orgId,
        data: { key_id: k.id, key_name: k.name, prefix: k.prefix, expires_at: new Date(k.expiresAt).toISOString() },
        text: `Makina: key ${k.name ?? k.prefix} (${k.id}) stops working at ${new Date(k.expiresAt).toISOString()}.`,
      });
    }
  }
}
