import { describe, expect, it } from "vitest";
import { RequestLedger, type LedgerBooks } from "../../relay/ledger/index.js";
import type { ApiKeyRecord } from "../../relay/keys/index.js";
import type { RequestOutcome } from "../../relay/metrics/index.js";
import type { NewRequestLogEntry } from "../../relay/store/index.js";
import type { UsageSample } from "../../relay/usage/index.js";

const KEY: ApiKeyRecord = {
  id: "key_1", orgId: "org_1", name: "k", prefix: "mk_live_Ab", keyHash: "h", stackIds: null, machineIds: null, rpm: 10, tpm: 1000,
  state: "active", createdAt: 0, revokedAt: null, lastUsedAt: null, createdBy: null, expiresAt: null, blockedAt: null, regeneratedAt: null, oldKeyHash: null, oldSecretUntil: null, serviceTier: "default", budget: null,
};

/** Books that write down what they are told, a key's admission that says what became of it, and a clock the test moves. */
function books() {
  const told = {
    usage: [] as UsageSample[],
    log: [] as NewRequestLogEntry[],
    metrics: [] as RequestOutcome[],
    tokens: [] as [string, number, number][],
    refusals: [] as number[],
    admission: [] as string[],
    inFlight: 0,
  };
  const b: LedgerBooks = {
    usage: { record: (s) => void told.usage.push(s) },
    requests: { record: (e) => void told.log.push(e) },
    metrics: {
      started: () => {
        told.inFlight++;
        return (o) => {
          told.inFlight--;
          told.metrics.push(o);
        };
      },
      usage: (model, p, c) => void told.tokens.push([model, p, c]),
    },
    refusals: { record: (_key, status) => void told.refusals.push(status) },
  };
  const admission = { headers: {}, settle: (t: number | null) => void told.admission.push(`settle ${t}`), refund: () => void told.admission.push("refund") };
  let mono = 1000;
  const clock = { mono: () => mono, wall: () => 1_700_000_000_000 };
  const advance = (ms: number) => (mono += ms);
  return { told, b, admission, clock, advance };
}

const done = { statusCode: 200, headersSent: true, writableFinished: true };

describe("RequestLedger: what a gateway request is billed and logged as", () => {
  it("a request served: the key pays what the runtime counted, the log has it once, the metrics its duration and first token", () => {
    const { told, b, admission, clock, advance } = books();
    const ledger = new RequestLedger(b, "req_1", clock, "chat/completions");
    expect(told.inFlight).toBe(1);
    ledger.keyKnown(KEY);
    ledger.asked("stories", true);
    ledger.planned({ model: "stories", stackId: "stk_1", machineId: "mach_1", metered: true, serviceTier: "flex" });
    ledger.admitted(admission);
    ledger.capturing([{ role: "user", content: "hi" }], 5_000);
    ledger.started();
    advance(30);
    ledger.firstToken();
    ledger.answerText("Hello");
    ledger.answerText(" there");
    advance(70);
    ledger.counted({ promptTokens: 3, completionTokens: 2 });
    ledger.closed(done);
    expect(told.admission).toEqual(["settle 5"]);
    expect(told.usage).toEqual([{ orgId: "org_1", keyId: "key_1", model: "stories", promptTokens: 3, completionTokens: 2, failed: false, tier: "flex" }]);
    expect(told.tokens).toEqual([["stories", 3, 2]]);
    expect(told.metrics).toEqual([{ model: "stories", status: 200, keyId: "key_1", errorCode: null, durationSeconds: 0.1, firstTokenSeconds: 0.03 }]);
    expect(told.inFlight).toBe(0);
    expect(told.log).toEqual([
      {
        at: 1_700_000_000_000, orgId: "org_1", requestId: "req_1", api: "chat/completions", serviceTier: "flex", cachedTokens: 0, keyId: "key_1", model: "stories", stackId: "stk_1", machineId: "mach_1", stream: true, status: 200,
        errorCode: null, promptTokens: 3, completionTokens: 2, latencyMs: 100, firstTokenMs: 30, loadMs: null,
        captureJson: JSON.stringify({ messages: [{ role: "user", content: "hi" }], answer: "Hello there", toolCalls: [], truncated: false }), captureUntil: 5_000,
      },
    ]);
    expect(told.refusals).toEqual([]);
  });

  it("a client that leaves mid-answer: logged as 499 canceled only once the machine says what it generated, and the key pays for it", () => {
    const { told, b, admission, clock } = books();
    const ledger = new RequestLedger(b, "req_2", clock);
    ledger.keyKnown(KEY);
    ledger.asked("stories", false);
    ledger.planned({ model: "stories", stackId: "stk_1", machineId: "mach_1", metered: true });
    ledger.admitted(admission);
    ledger.started();
    ledger.notServed("canceled", false, true);
    ledger.closed({ statusCode: 200, headersSent: false, writableFinished: false });
    // Closed, but the runtime has not counted yet: nothing logged, nothing refunded.
    expect(told.log).toEqual([]);
    expect(told.admission).toEqual([]);
    ledger.counted({ promptTokens: 4, completionTokens: 9 });
    expect(told.admission).toEqual(["settle 13"]);
    expect(told.log).toEqual([expect.objectContaining({ status: 499, errorCode: "canceled", promptTokens: 4, completionTokens: 9 })]);
    // A second count (a late duplicate) changes nothing.
    ledger.counted({ promptTokens: 100, completionTokens: 100 });
    expect([told.log.length, told.usage.length, told.admission.length]).toEqual([1, 1, 1]);
  });

  it("a request refused before it ran: refunded, counted as an error of the key with no tokens, its refusal budget told", () => {
    const { told, b, admission, clock } = books();
    const ledger = new RequestLedger(b, "req_3", clock);
    ledger.keyKnown(KEY);
    ledger.asked("stories", false);
    ledger.planned({ model: "stories", stackId: "stk_1", machineId: "mach_1", metered: true });
    ledger.admitted(admission);
    ledger.notServed("queue_full", false, false);
    ledger.refused("runtime_unavailable", 503);
    ledger.closed({ statusCode: 503, headersSent: true, writableFinished: true });
    expect(told.admission).toEqual(["refund"]);
    expect(told.refusals).toEqual([503]);
    expect(told.usage).toEqual([{ orgId: "org_1", keyId: "key_1", model: "stories", promptTokens: 0, completionTokens: 0, failed: true, tier: "" }]);
    expect(told.log).toEqual([expect.objectContaining({ status: 503, errorCode: "runtime_unavailable", promptTokens: 0, completionTokens: 0, firstTokenMs: null })]);
  });

  it("canceled while waiting its turn: refunded (the machine never saw it); canceled after its turn: not refunded", () => {
    for (const [hadTurn, expected] of [[false, ["refund"]], [true, []]] as const) {
      const { told, b, admission, clock } = books();
      const ledger = new RequestLedger(b, "req_4", clock);
      ledger.keyKnown(KEY);
      ledger.admitted(admission);
      ledger.notServed("canceled", false, hadTurn);
      expect(told.admission).toEqual(expected);
    }
  });

  it("a request ended by the relay's stop after its turn is not refunded: the machine worked on it, and its count settles", () => {
    for (const [hadTurn, expected] of [[true, ["settle 7"]], [false, ["refund", "settle 7"]]] as const) {
      const { told, b, admission, clock } = books();
      const ledger = new RequestLedger(b, "req_9", clock);
      ledger.keyKnown(KEY);
      ledger.admitted(admission);
      if (hadTurn) ledger.started();
      ledger.notServed("runtime_unavailable", false, hadTurn, true);
      ledger.counted({ promptTokens: 3, completionTokens: 4 });
      expect(told.admission).toEqual(expected);
    }
  });

  it("an answer already begun is never refunded, whatever broke it", () => {
    const { told, b, admission, clock } = books();
    const ledger = new RequestLedger(b, "req_5", clock);
    ledger.keyKnown(KEY);
    ledger.admitted(admission);
    ledger.started();
    ledger.notServed("internal_error", true, true);
    ledger.broke("stream_incomplete");
    ledger.counted(null);
    ledger.closed(done);
    expect(told.admission).toEqual(["settle null"]);
    expect(told.usage).toEqual([expect.objectContaining({ failed: true, promptTokens: 0, completionTokens: 0 })]);
    expect(told.log).toEqual([expect.objectContaining({ status: 200, errorCode: "stream_incomplete" })]);
  });

  it("a request that only counts tokens (count_tokens) uses none of the key's", () => {
    const { told, b, admission, clock } = books();
    const ledger = new RequestLedger(b, "req_6", clock);
    ledger.keyKnown(KEY);
    ledger.planned({ model: "stories", stackId: "stk_1", machineId: "mach_1", metered: false });
    ledger.admitted(admission);
    ledger.started();
    ledger.counted({ promptTokens: 50, completionTokens: 0 });
    ledger.closed(done);
    expect(told.admission).toEqual(["settle 0"]);
    expect(told.usage).toEqual([expect.objectContaining({ promptTokens: 0, completionTokens: 0, failed: false })]);
  });

  it("a request with no key known: in the metrics, in no key's books", () => {
    const { told, b, clock } = books();
    const ledger = new RequestLedger(b, "req_7", clock);
    ledger.refused("invalid_api_key", 401);
    ledger.closed({ statusCode: 401, headersSent: true, writableFinished: true });
    ledger.closed({ statusCode: 401, headersSent: true, writableFinished: true });
    expect(told.metrics).toEqual([expect.objectContaining({ status: 401, keyId: "", errorCode: "invalid_api_key", model: "" })]);
    expect([told.usage, told.log, told.refusals]).toEqual([[], [], []]);
  });

  it("a refused key (revoked, expired) is the request's key: its refusal is logged as its own, under the model it asked for", () => {
    const { told, b, clock } = books();
    const ledger = new RequestLedger(b, "req_8", clock);
    ledger.keyKnown({ ...KEY, state: "revoked" });
    ledger.asked("stories", false);
    ledger.refused("invalid_api_key", 401);
    ledger.closed({ statusCode: 401, headersSent: true, writableFinished: true });
    expect(told.refusals).toEqual([401]);
    expect(told.usage).toEqual([expect.objectContaining({ model: "", failed: true })]);
    expect(told.log).toEqual([expect.objectContaining({ model: "stories", status: 401, errorCode: "invalid_api_key", keyId: "key_1" })]);
  });
});
