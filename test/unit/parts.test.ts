import { describe, expect, it } from "vitest";
import { PartStartError, Parts, silentLogger } from "../../proto/index.js";

describe("Parts: a process as an ordered list of parts", () => {
  /** A part that writes what happens to it in `events`. */
  const part = (events: string[], name: string, options: { failStart?: unknown; failStop?: boolean; setting?: string } = {}) => ({
    name,
    setting: options.setting,
    start: async () => {
      events.push(`start ${name}`);
      if (options.failStart !== undefined) throw options.failStart;
      return name.toUpperCase();
    },
    stop: async (value: string) => {
      events.push(`stop ${name} (${value})`);
      if (options.failStop) throw new Error(`${name} would not stop`);
    },
  });

  it("stops the parts newest first, each given its own value, once however often stop is called", async () => {
    const events: string[] = [];
    const parts = new Parts("relay", silentLogger());
    expect(await parts.start(part(events, "store"))).toBe("STORE");
    await parts.start(part(events, "link"));
    await parts.start(part(events, "listener"));
    await Promise.all([parts.stop(), parts.stop()]);
    await parts.stop();
    expect(events).toEqual(["start store", "start link", "start listener", "stop listener (LISTENER)", "stop link (LINK)", "stop store (STORE)"]);
    expect(parts.list()).toEqual([
      { name: "store", state: "stopped" },
      { name: "link", state: "stopped" },
      { name: "listener", state: "stopped" },
    ]);
  });

  it("a part that fails to start stops those before it, in reverse, and the start says which part and which setting", async () => {
    const events: string[] = [];
    const parts = new Parts("relay", silentLogger());
    await parts.start(part(events, "store"));
    await parts.start(part(events, "link"));
    const taken = Object.assign(new Error("listen EADDRINUSE: address already in use 0.0.0.0:8083"), { code: "EADDRINUSE", address: "0.0.0.0", port: 8083 });
    const failed = parts.start(part(events, "the install listener", { failStart: taken, setting: "--install-port or MAKINA_INSTALL_PORT" }));
    await expect(failed).rejects.toThrow(PartStartError);
    await expect(failed).rejects.toThrow("The relay could not start: the install listener: 0.0.0.0:8083 is already in use by another program; change it with --install-port or MAKINA_INSTALL_PORT.");
    await expect(failed).rejects.toMatchObject({ part: "the install listener", setting: "--install-port or MAKINA_INSTALL_PORT", cause: taken });
    expect(events).toEqual(["start store", "start link", "start the install listener", "stop link (LINK)", "stop store (STORE)"]);
    expect(parts.list().map((p) => p.state)).toEqual(["stopped", "stopped", "failed"]);
    // Nothing starts on a list that has stopped.
    await expect(parts.start(part(events, "late"))).rejects.toThrow("the process is stopping");
    expect(events.at(-1)).toBe("stop store (STORE)");
  });

  it("a part that finishes starting after the stop began is stopped at once, not left behind", async () => {
    const events: string[] = [];
    const parts = new Parts("relay", silentLogger());
    await parts.start(part(events, "store"));
    let finish!: () => void;
    const slow = parts.start({ name: "listener", start: () => new Promise<string>((resolve) => (finish = () => resolve("LISTENER"))), stop: (v: string) => void events.push(`stop listener (${v})`) });
    const stopped = parts.stop();
    finish();
    await expect(slow).rejects.toThrow("the process is stopping");
    await stopped;
    expect(events).toEqual(["start store", "stop store (STORE)", "stop listener (LISTENER)"]);
    expect(parts.list()).toEqual([
      { name: "store", state: "stopped" },
      { name: "listener", state: "stopped" },
    ]);
  });

  it("a part whose stop throws does not keep the parts below it from stopping", async () => {
    const events: string[] = [];
    const parts = new Parts("agent", silentLogger());
    await parts.start(part(events, "runtimes"));
    await parts.start(part(events, "link", { failStop: true }));
    await parts.stop();
    expect(events.slice(2)).toEqual(["stop link (LINK)", "stop runtimes (RUNTIMES)"]);
    expect(parts.list().every((p) => p.state === "stopped")).toBe(true);
  });

  it("does not repeat a setting the reason already names", async () => {
    const parts = new Parts("relay", silentLogger());
    const busy = new Error("Another relay (pid 7) is using the data directory /d. Stop it first, or start this one with another --data-dir.");
    await expect(parts.start({ name: "the data directory", setting: "--data-dir or MAKINA_DATA_DIR", start: () => Promise.reject(busy) })).rejects.toThrow(
      /^The relay could not start: the data directory: Another relay \(pid 7\) is using the data directory \/d\. Stop it first, or start this one with another --data-dir\.$/,
    );
  });
});
