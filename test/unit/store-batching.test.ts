import { setImmediate as nextTurn } from "node:timers/promises";
import { describe, expect, it, vi } from "vitest";
import { BatchLoader } from "../../relay/store/batch-loader.js";
import { BatchWriter } from "../../relay/store/batch-writer.js";

/** A promise and the functions that settle it, for a fetch or write held open by the test. */
function held<T>() {
  let resolve!: (v: T) => void;
  let reject!: (err: unknown) => void;
  const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}

describe("BatchLoader", () => {
  it("reads the keys asked for in one turn in one fetch, each once, and gives the missing value for keys not found", async () => {
    const fetched: string[][] = [];
    const loader = new BatchLoader<string, string | undefined>(async (keys) => {
      fetched.push(keys);
      return new Map(keys.filter((k) => k !== "nobody").map((k) => [k, k.toUpperCase()]));
    }, undefined);
    expect(await Promise.all(["a", "b", "a", "nobody"].map((k) => loader.load(k)))).toEqual(["A", "B", "A", undefined]);
    expect(fetched).toEqual([["a", "b", "nobody"]]);
  });

  it("sends keys asked for while a fetch runs in the next fetch, started after the first ended", async () => {
    const fetches: { keys: string[]; answer: ReturnType<typeof held<Map<string, number>>> }[] = [];
    const loader = new BatchLoader<string, number>((keys) => {
      const answer = held<Map<string, number>>();
      fetches.push({ keys, answer });
      return answer.promise;
    }, 0);
    const first = loader.load("a");
    await nextTurn();
    const second = [loader.load("b"), loader.load("c")];
    await nextTurn();
    // A key read now must not be answered by a read that started before it was asked for.
    expect(fetches.map((f) => f.keys)).toEqual([["a"]]);
    fetches[0]!.answer.resolve(new Map([["a", 1]]));
    expect(await first).toBe(1);
    await vi.waitFor(() => expect(fetches.map((f) => f.keys)).toEqual([["a"], ["b", "c"]]));
    fetches[1]!.answer.resolve(new Map([["b", 2]]));
    expect(await Promise.all(second)).toEqual([2, 0]);
  });

  it("fails every key of a failed fetch, and reads the next keys afresh", async () => {
    let fail = true;
    const loader = new BatchLoader<string, string>(async (keys) => {
      if (fail) throw new Error("database gone");
      return new Map(keys.map((k) => [k, k]));
    }, "");
    const failed = await Promise.allSettled([loader.load("a"), loader.load("b")]);
    expect(failed.map((r) => r.status === "rejected" && (r.reason as Error).message)).toEqual(["database gone", "database gone"]);
    fail = false;
    expect(await loader.load("a")).toBe("a");
  });

  it("cuts a large batch into fetches of at most maxBatch keys", async () => {
    const sizes: number[] = [];
    const loader = new BatchLoader<number, number>(
      async (keys) => {
        sizes.push(keys.length);
        return new Map(keys.map((k) => [k, k * 2]));
      },
      -1,
      100,
    );
    const got = await Promise.all(Array.from({ length: 250 }, (_, i) => loader.load(i)));
    expect(got).toEqual(Array.from({ length: 250 }, (_, i) => i * 2));
    expect(sizes).toEqual([100, 100, 50]);
  });
});

type Write = { kind: "online" | "offline"; key: string; n: number };

describe("BatchWriter", () => {
  it("writes each row's writes in order, the writes of different rows of one kind together, a row written twice in a row keeping its last write", async () => {
    const statements: Write[][] = [];
    const rows = new Map<string, string>();
    const writer = new BatchWriter<Write>(async (run) => {
      statements.push(run);
      for (const w of run) rows.set(w.key, `${w.kind} ${w.n}`);
    });
    await Promise.all([
      writer.write({ kind: "online", key: "m1", n: 1 }),
      writer.write({ kind: "online", key: "m2", n: 2 }),
      writer.write({ kind: "online", key: "m1", n: 3 }),
      writer.write({ kind: "offline", key: "m1", n: 4 }),
      writer.write({ kind: "online", key: "m3", n: 5 }),
    ]);
    expect(statements.map((s) => s.map((w) => w.n))).toEqual([[3, 2, 5], [4]]);
    // Online then offline: offline, as writing them one by one would have left it.
    expect(Object.fromEntries(rows)).toEqual({ m1: "offline 4", m2: "online 2", m3: "online 5" });
  });

  it("fails only the writes of a failed statement; the others and the next batch are written", async () => {
    const written: number[] = [];
    const writer = new BatchWriter<Write>(async (run) => {
      if (run[0]!.kind === "offline") throw new Error("refused");
      written.push(...run.map((w) => w.n));
    });
    const results = await Promise.allSettled([
      writer.write({ kind: "online", key: "a", n: 1 }),
      writer.write({ kind: "offline", key: "a", n: 2 }),
      writer.write({ kind: "online", key: "b", n: 3 }),
    ]);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    await writer.write({ kind: "online", key: "c", n: 4 });
    expect(written).toEqual([1, 3, 4]);
  });

  it("batches the writes asked for while a batch is being written into the next one", async () => {
    const statements: number[][] = [];
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const writer = new BatchWriter<Write>(async (run) => {
      statements.push(run.map((w) => w.n));
      if (statements.length === 1) await gate;
    });
    const first = writer.write({ kind: "online", key: "a", n: 1 });
    await nextTurn();
    const later = Array.from({ length: 5 }, (_, i) => writer.write({ kind: "online", key: `k${i}`, n: 10 + i }));
    await nextTurn();
    expect(statements).toEqual([[1]]);
    // What the store waits for before it closes the database: every write asked for so far.
    let drained = false;
    const draining = writer.drain().then(() => (drained = true));
    await nextTurn();
    expect(drained).toBe(false);
    release();
    await draining;
    expect(drained).toBe(true);
    await Promise.all([first, ...later]);
    expect(statements).toEqual([[1], [10, 11, 12, 13, 14]]);
  });
});
