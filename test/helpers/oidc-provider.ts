import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { exportJWK, generateKeyPair, type CryptoKey } from "jose";
import Provider from "oidc-provider";

/** A real OpenID provider for tests, on loopback: its HTTP server, its issuer URL, the key it signs ID tokens with. */
export interface TestIdentityProvider {
  readonly server: Server;
  readonly issuer: string;
  /** The provider's signing key (RS256) and its key id. */
  readonly key: CryptoKey;
  readonly kid: string;
  /** Registers the relay's client (`makina` / `makina-client-secret`) with its redirect URIs; until then the server answers 503. */
  register(redirectUris: string[]): Handler;
  /** When set, each request goes through it (a test's changes on the way) instead of straight to the provider. */
  route?: (req: IncomingMessage, res: ServerResponse, handle: Handler) => void;
  close(): Promise<void>;
}

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/**
 * `oidc-provider` (a certified implementation) on a loopback port: its development sign-in page takes any login
 * and any password. Each person's email is `<login>@acme.test`; logins starting `admin` are in the
 * `makina-admins` group. The server's requests go to the provider once `register` has named the redirect URIs
 * (which are known only once the relay listens).
 */
export async function startIdentityProvider(): Promise<TestIdentityProvider> {
  const pair = await generateKeyPair("RS256", { extractable: true });
  const jwk = { ...(await exportJWK(pair.privateKey)), kid: "test-key", alg: "RS256", use: "sig" };
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  let handle: Handler | undefined;
  const idp: TestIdentityProvider = {
    server,
    issuer,
    key: pair.privateKey,
    kid: jwk.kid,
    register(redirectUris: string[]) {
      const provider = new Provider(issuer, {
        clients: [{ client_id: "makina", client_secret: "makina-client-secret", redirect_uris: redirectUris, grant_types: ["authorization_code"], response_types: ["code"] }],
        jwks: { keys: [jwk] },
        cookies: { keys: ["test-cookie-key"] },
        claims: { openid: ["sub"], email: ["email"], profile: ["preferred_username", "groups"] },
        conformIdTokenClaims: false,
        findAccount: (_ctx, sub) => ({ accountId: sub, claims: () => ({ sub, email: `${sub}@acme.test`, preferred_username: sub, groups: sub.startsWith("admin") ? ["makina-admins", "staff"] : ["staff"] }) }),
      });
      handle = provider.callback();
      return handle;
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
  server.on("request", (req: IncomingMessage, res: ServerResponse) => {
    if (!handle) return void res.writeHead(503).end();
    if (idp.route) return idp.route(req, res, handle);
    handle(req, res);
  });
  return idp;
}
