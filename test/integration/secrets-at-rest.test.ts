import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { silentLogger } from "../../proto/index.js";
import { resolveRelayConfig, startRelay } from "../../relay/index.js";
import { openStore, type DatabaseLocation, type Store } from "../../relay/store/index.js";
import { openVault, readSecretsKeyFile, SecretsKey, SecretsKeyError, type SecretsKeySource } from "../../relay/vault/index.js";
import { runCli } from "../helpers/cli.js";
import { DIALECTS, emptyDatabase } from "../helpers/databases.js";

const dirs: string[] = [];
const newDir = () => {
  const d = mkdtempSync(join(tmpdir(), "makina-secrets-"));
  dirs.push(d);
  return d;
};
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

const SETTING = "--secrets-key-file or MAKINA_SECRETS_KEY_FILE, or MAKINA_SECRETS_KEY";

describe("the secrets key", () => {
  it("is read as openssl writes it (base64 or hex), and anything else is refused without being echoed", () => {
    const key = SecretsKey.generate();
    expect(SecretsKey.parse(`${key.text()}\n`, "f").id).toBe(key.id);
    expect(SecretsKey.parse(Buffer.from(key.text(), "base64").toString("hex"), "f").id).toBe(key.id);
    expect(SecretsKey.parse(Buffer.from(key.text(), "base64").toString("base64url"), "f").id).toBe(key.id);
    for (const bad of ["", "hunter2hunter2", key.text().slice(0, 40), `${key.text()}AAAA`]) {
      const err = (() => {
        try {
          SecretsKey.parse(bad, "/etc/makina/secrets.key");
        } catch (e) {
          return e as Error;
        }
      })();
      expect(err).toBeInstanceOf(SecretsKeyError);
      expect(err!.message).toBe("/etc/makina/secrets.key is not a secrets key: it must be 32 random bytes in base64 or hex (openssl rand -base64 32)");
    }
  });

  it("opens what it sealed, and nothing sealed with another key, for another setting, or altered", () => {
    const key = SecretsKey.generate();
    const sealed = key.seal("peer_secret", "the relays' secret");
    expect(sealed).toMatch(new RegExp(`^mks1\\.${key.id}\\.[A-Za-z0-9_-]+$`));
    expect(sealed).not.toContain("secret");
    expect(key.open("peer_secret", sealed)).toBe("the relays' secret");
    // A fresh nonce each time: the same value never seals the same.
    expect(key.seal("peer_secret", "the relays' secret")).not.toBe(sealed);
    const other = SecretsKey.generate();
    expect(() => other.open("peer_secret", sealed)).toThrow(`the setting peer_secret is sealed with the secrets key ${key.id}, not with this one (${other.id})`);
    expect(() => key.open("link_certificates", sealed)).toThrow(`the setting link_certificates does not open with the secrets key ${key.id}: it was altered, or sealed for another setting`);
    const body = sealed.split(".")[2]!;
    const altered = `mks1.${key.id}.${body.slice(0, 20)}${body[20] === "A" ? "B" : "A"}${body.slice(21)}`;
    expect(() => key.open("peer_secret", altered)).toThrow("does not open");
  });
});

describe.each(DIALECTS)("a relay's secrets on %s", (dialect) => {
  const open = async (location: DatabaseLocation, dataDir: string, source: SecretsKeySource = { kind: "data-dir" }) => {
    const store = await openStore(location);
    try {
      const vault = await openVault({ settings: store.settings, dataDir, source, shared: dialect === "postgres", setting: SETTING, log: silentLogger() });
      return { store, vault };
    } catch (err) {
      await store.close();
      throw err;
    }
  };
  const stored = (store: Store, name: string) => store.settings.get(name);

  it("are sealed with a key made into the data directory on first start (its user's only), which the database only names", async () => {
    const location = await emptyDatabase(dialect);
    const dir = newDir();
    const first = await open(location, dir);
    const file = join(dir, "secrets.key");
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const key = readSecretsKeyFile(file);
    expect(first.vault.keyId).toBe(key.id);
    expect(await stored(first.store, "secrets_key_id")).toBe(key.id);
    const secret = await first.vault.getOrMake("peer_secret", () => "made once");
    expect(secret).toBe("made once");
    const row = (await stored(first.store, "peer_secret"))!;
    expect(row).toMatch(/^mks1\./);
    expect(row).not.toContain("made once");
    await first.store.close();
    // Started again: the key is read from the data directory, and what was made is kept.
    const again = await open(location, dir);
    expect(await again.vault.getOrMake("peer_secret", () => "made twice")).toBe("made once");
    await again.store.close();
  });

  it("seals a secret an earlier version kept in clear the first time it is read", async () => {
    const location = await emptyDatabase(dialect);
    const { store, vault } = await open(location, newDir());
    await store.settings.set("peer_secret", "kept in clear");
    expect(await vault.get("peer_secret")).toBe("kept in clear");
    const row = (await stored(store, "peer_secret"))!;
    expect(row).toMatch(/^mks1\./);
    expect(await vault.get("peer_secret")).toBe("kept in clear");
    await store.close();
  });

  it("are refused to a relay given another key, and to one given none when it needs them, each saying how to give the key", async () => {
    const location = await emptyDatabase(dialect);
    const first = await open(location, newDir(), { kind: "value", text: SecretsKey.generate().text(), name: "MAKINA_SECRETS_KEY" });
    const id = first.vault.keyId;
    await first.vault.getOrMake("peer_secret", () => "the relays' secret");
    const wrong = join(newDir(), "wrong.key");
    writeFileSync(wrong, SecretsKey.generate().text());
    await expect(open(location, newDir(), { kind: "file", path: wrong })).rejects.toThrow(
      new RegExp(`^the secrets in this database are sealed with the secrets key ${id}, and this relay was given another \\([0-9a-f]{12}, ${wrong}\\): give it the key the other relays have \\(${SETTING}\\)$`),
    );
    // Given none, on a database that names one: it starts (nothing else needs the key) and makes no key of its own.
    const dir = newDir();
    const keyless = await open(location, dir);
    expect(keyless.vault.keyId).toBeUndefined();
    expect(existsSync(join(dir, "secrets.key"))).toBe(false);
    await expect(keyless.vault.get("peer_secret")).rejects.toThrow(
      `the secrets in this database are sealed with the secrets key ${id}, which this relay was not given: copy the key file of the relay that made it (its data directory's secrets.key) and give it with ${SETTING}`,
    );
    await Promise.all([first.store.close(), keyless.store.close()]);
  });

  it("are sealed with a new key by `makina secrets-key rotate`, after which only the new key opens them", async () => {
    const dataDir = newDir();
    // On SQLite, the relay's own database in its data directory.
    const location: DatabaseLocation = dialect === "sqlite" ? { kind: "sqlite", file: join(dataDir, "makina.db") } : await emptyDatabase(dialect);
    const oldFile = join(newDir(), "old.key");
    writeFileSync(oldFile, SecretsKey.generate().text());
    const source: SecretsKeySource = dialect === "sqlite" ? { kind: "data-dir" } : { kind: "file", path: oldFile };
    const first = await open(location, dataDir, source);
    const old = readSecretsKeyFile(dialect === "sqlite" ? join(dataDir, "secrets.key") : oldFile);
    await first.vault.getOrMake("peer_secret", () => "the relays' secret");
    await first.vault.getOrMake("link_certificates", () => "-----BEGIN PRIVATE KEY-----");
    await first.store.close();
    const newFile = join(newDir(), "new.key");
    const where = dialect === "sqlite" ? ["--data-dir", dataDir] : ["--database", location.kind === "postgres" ? location.url : "", "--secrets-key-file", oldFile, "--new-key-file", newFile];
    const r = await runCli(["secrets-key", "rotate", ...where, "--json"]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as { from: string; to: string; key_file: string; retired_file: string | null; resealed: string[] };
    const keyFile = dialect === "sqlite" ? join(dataDir, "secrets.key") : newFile;
    const key = readSecretsKeyFile(keyFile);
    expect(out).toEqual({
      from: old.id,
      to: key.id,
      key_file: keyFile,
      retired_file: dialect === "sqlite" ? join(dataDir, `secrets-${old.id}.key.retired`) : null,
      resealed: ["link_certificates", "peer_secret"],
    });
    expect(statSync(keyFile).mode & 0o777).toBe(0o600);
    if (dialect === "sqlite") expect(readSecretsKeyFile(out.retired_file!).id).toBe(old.id);
    const store = await openStore(location);
    expect(await store.settings.get("secrets_key_id")).toBe(key.id);
    const row = (await store.settings.get("peer_secret"))!;
    expect(key.open("peer_secret", row)).toBe("the relays' secret");
    expect(() => old.open("peer_secret", row)).toThrow(SecretsKeyError);
    await store.close();
    // The old key no longer opens the vault; the new one does.
    await expect(open(location, newDir(), { kind: "file", path: dialect === "sqlite" ? out.retired_file! : oldFile })).rejects.toThrow(`sealed with the secrets key ${key.id}, and this relay was given another (${old.id}`);
    const after = await open(location, dataDir, dialect === "sqlite" ? { kind: "data-dir" } : { kind: "file", path: newFile });
    expect(await after.vault.get("link_certificates")).toBe("-----BEGIN PRIVATE KEY-----");
    await after.store.close();
  });
});

describe("makina secrets-key rotate on a relay's own data directory", () => {
  it("refuses while the relay runs, and the relay starts again with the new key once it has run", async () => {
    const dataDir = newDir();
    const config = resolveRelayConfig({ flags: { dataDir, port: 0, grpcPort: 0, grpcHost: "127.0.0.1", installPort: 0 } });
    const relay = await startRelay(config, { log: silentLogger() });
    const before = readSecretsKeyFile(join(dataDir, "secrets.key")).id;
    const running = await runCli(["secrets-key", "rotate", "--data-dir", dataDir]);
    expect(running.code).toBe(1);
    expect(running.stderr).toMatch(/^makina: Another relay \(pid \d+\) is using the data directory .*\. Stop it first/);
    // Nothing changed: no new key lies about.
    expect(readSecretsKeyFile(join(dataDir, "secrets.key")).id).toBe(before);
    expect(existsSync(join(dataDir, "secrets.key.new"))).toBe(false);
    await relay.stop();
    const done = await runCli(["secrets-key", "rotate", "--data-dir", dataDir]);
    expect(done.code).toBe(0);
    const after = readSecretsKeyFile(join(dataDir, "secrets.key")).id;
    expect(after).not.toBe(before);
    expect(done.stdout).toContain(`sealed with:  ${after} (was ${before})`);
    expect(done.stdout).toContain("Start the relay again: it reads the new key from its data directory.");
    const again = await startRelay(config, { log: silentLogger() });
    expect((await fetch(`${again.url}/health`)).status).toBe(200);
    await again.stop();
    // A key given to the command needs a place for the new one.
    const given = await runCli(["secrets-key", "rotate", "--data-dir", dataDir, "--secrets-key-file", join(dataDir, "secrets.key")]);
    expect([given.code, given.stderr]).toEqual([1, "makina: give --new-key-file FILE: where the new secrets key is read from, or written to (the key in use was given to this command, not taken from the data directory)\n"]);
  });
});
