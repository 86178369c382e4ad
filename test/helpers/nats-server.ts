import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { answers, spawnServer, type SpawnedServer } from "./spawned-server.js";

/** A real NATS server on loopback, for tests. */
export interface NatsServer extends SpawnedServer {
  /** `nats://127.0.0.1:<port>` */
  readonly url: string;
}

/** Starts Debian's `nats-server` (apt-get install -y nats-server) on a free loopback port. */
export async function startNats(): Promise<NatsServer> {
  const server = await spawnServer("nats-server", (port) => ["-a", "127.0.0.1", "-p", String(port)], (port) => answers(port, "INFO"));
  return Object.assign(server, { url: `nats://127.0.0.1:${server.port}` });
}

/**
 * A NATS server in operator mode that lets in only users of its one account, and a credentials file (user JWT
 * and NKey seed, as `nsc` writes it) of one such user. The JWTs are signed here with NKeys (`@nats-io/nkeys`).
 */
export async function startNatsRequiringCredentials(): Promise<NatsServer & { credsFile: string }> {
  const { createAccount, createOperator, createUser } = await import("@nats-io/nkeys");
  const [operator, account, user] = [createOperator(), createAccount(), createUser()];
  const b64 = (v: string | Uint8Array) => Buffer.from(v).toString("base64url");
  const jwt = (issuer: typeof operator, subject: string, name: string, nats: Record<string, unknown>) => {
    const head = b64(JSON.stringify({ typ: "JWT", alg: "ed25519-nkey" }));
    const claims = b64(JSON.stringify({ jti: randomBytes(16).toString("hex"), iat: Math.floor(Date.now() / 1000), iss: issuer.getPublicKey(), name, sub: subject, nats: { ...nats, version: 2 } }));
    return `${head}.${claims}.${b64(issuer.sign(Buffer.from(`${head}.${claims}`)))}`;
  };
  const unlimited = { subs: -1, data: -1, payload: -1 };
  const operatorJwt = jwt(operator, operator.getPublicKey(), "test operator", { type: "operator" });
  const accountJwt = jwt(operator, account.getPublicKey(), "relays", { type: "account", limits: { ...unlimited, imports: -1, exports: -1, wildcards: true, conn: -1, leaf: -1 } });
  const userJwt = jwt(account, user.getPublicKey(), "relay", { type: "user", pub: {}, sub: {}, ...unlimited });
  let credsFile = "";
  const server = await spawnServer(
    "nats-server",
    (port, dir) => {
      writeFileSync(join(dir, "operator.jwt"), operatorJwt);
      writeFileSync(join(dir, "server.conf"), `listen: "127.0.0.1:${port}"\noperator: "${join(dir, "operator.jwt")}"\nresolver: MEMORY\nresolver_preload: {\n  ${account.getPublicKey()}: "${accountJwt}"\n}\n`);
      credsFile = join(dir, "relay.creds");
      const seed = new TextDecoder().decode(user.getSeed());
      writeFileSync(credsFile, `-----BEGIN NATS USER JWT-----\n${userJwt}\n------END NATS USER JWT------\n\n-----BEGIN USER NKEY SEED-----\n${seed}\n------END USER NKEY SEED------\n`, { mode: 0o600 });
      return ["-c", join(dir, "server.conf")];
    },
    (port) => answers(port, "INFO"),
  );
  return Object.assign(server, { url: `nats://127.0.0.1:${server.port}`, credsFile });
}
