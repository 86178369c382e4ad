import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, it, vi } from "vitest";
import { GatewayDirectory } from "../../relay/routing/index.js";
import { openStore } from "../../relay/store/index.js";

const dir = mkdtempSync(join(tmpdir(), "makina-directory-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it("reads an organization's stacks once for the changes to them announced while its reload waits, and routes as after the last", async () => {
  const store = await openStore({ kind: "sqlite", file: join(dir, "relay.db") });
  const org = (await store.orgs.create("Acme"))!;
  const machine = await store.machines.create({ orgId: org.id, name: "m", tokenHash: "h" });
  const stacks = [];
  for (const modelId of ["one", "two", "three"]) {
    const stack = await store.stacks.create({ orgId: org.id, name: modelId, machineId: machine.id, runtime: "gguf", modelRef: "/m.gguf", modelId, hasEndpoint: true });
    await store.stacks.transition(stack.id, "deploying");
    await store.stacks.transition(stack.id, "deployed");
    stacks.push(stack);
  }
  const directory = await GatewayDirectory.open(store);
  try {
    expect(directory.servingModel(org.id, "two").map((s) => s.id)).toEqual([stacks[1]!.id]);
    const reads = vi.spyOn(store.stacks, "serving");
    // The directory is busy with something else (a change before these) while the stacks change three times.
    let release!: () => void;
    void directory.afterQueued(() => new Promise<void>((resolve) => (release = resolve)));
    const followed: Promise<void>[] = [];
    for (const stack of stacks.slice(0, 2)) {
      await store.db.updateTable("stacks").set({ state: "draft" }).where("id", "=", stack.id).execute();
      followed.push(directory.follow({ kind: "stacks", orgId: org.id }));
    }
    // A change of another organization's stacks is read on its own.
    followed.push(directory.follow({ kind: "stacks", orgId: "org_other" }));
    await store.db.updateTable("stacks").set({ state: "draft" }).where("id", "=", stacks[2]!.id).execute();
    followed.push(directory.follow({ kind: "stacks", orgId: org.id }));
    release();
    await Promise.all(followed);
    expect(reads.mock.calls).toEqual([[org.id], ["org_other"]]);
    expect(["one", "two", "three"].map((m) => directory.servingModel(org.id, m).length)).toEqual([0, 0, 0]);
    // Once that reload has started, a new change is read again.
    await store.db.updateTable("stacks").set({ state: "deployed" }).where("id", "=", stacks[0]!.id).execute();
    await directory.follow({ kind: "stacks", orgId: org.id });
    expect(reads).toHaveBeenCalledTimes(3);
    expect(directory.servingModel(org.id, "one").map((s) => s.id)).toEqual([stacks[0]!.id]);
  } finally {
    directory.close();
    await store.close();
  }
});
