import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { lockDataDir } from "../../relay/data-dir-lock.js";

describe("a relay's hold on its data directory", () => {
  let dir: string;
  beforeEach(() => {
    dir = join(mkdtempSync(join(tmpdir(), "makina-lock-")), "data");
  });
  afterEach(() => rmSync(join(dir, ".."), { recursive: true, force: true }));

  it("creates the directory private, takes it, and gives it back", () => {
    const lock = lockDataDir(dir);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    expect(readFileSync(join(dir, "relay.lock"), "utf8").trim()).toBe(String(process.pid));
    lock.release();
    expect(existsSync(join(dir, "relay.lock"))).toBe(false);
  });

  it("takes over a lock left by a relay that died", () => {
    lockDataDir(dir).release();
    const dead = spawnSync(process.execPath, ["-e", ""]).pid!;
    writeFileSync(join(dir, "relay.lock"), `${dead}\n`);
    const lock = lockDataDir(dir);
    expect(readFileSync(join(dir, "relay.lock"), "utf8").trim()).toBe(String(process.pid));
    lock.release();
  });

  it("refuses a directory a live relay holds, naming it", () => {
    lockDataDir(dir).release();
    writeFileSync(join(dir, "relay.lock"), `${process.ppid}\n`);
    expect(() => lockDataDir(dir)).toThrow(`Another relay (pid ${process.ppid}) is using the data directory ${dir}`);
  });
});
