import { createHash, X509Certificate } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { connect, type DetailedPeerCertificate, type PeerCertificate } from "node:tls";
import { LINK_TLS_SERVER_NAME } from "../../proto/index.js";

const sha256 = (der: Buffer) => createHash("sha256").update(der).digest("hex");

/**
 * The relay's own CA, trusted only when its SHA-256 fingerprint is the one this machine was given (by the
 * install command). It is kept in `cacheFile` once seen; otherwise it is read from the certificate chain the
 * relay presents in a TLS handshake and checked against the fingerprint. A relay presenting no certificate
 * from that CA is refused: nothing else is sent to it.
 */
export async function pinnedCa(server: string, caSha256: string, cacheFile: string, timeoutMs = 10_000): Promise<string> {
  if (existsSync(cacheFile)) {
    const cached = readFileSync(cacheFile, "utf8");
    try {
      if (sha256(new X509Certificate(cached).raw) === caSha256) return cached;
    } catch {
      // A damaged file is read again from the relay.
    }
  }
  const chain = await presentedChain(server, timeoutMs);
  const ca = chain.find((der) => sha256(der) === caSha256);
  if (!ca) {
    throw new Error(
      `The relay at ${server} presented no certificate from the CA this machine trusts (sha256 ${caSha256.slice(0, 16)}…): it is not the relay this machine was added to, or that relay's certificates were made anew. Nothing was sent to it.`,
    );
  }
  const pem = new X509Certificate(ca).toString();
  writeFileSync(cacheFile, pem);
  return pem;
}

/** The DER certificates a TLS server presents, server first. */
function presentedChain(server: string, timeoutMs: number): Promise<Buffer[]> {
  const m = /^\[?([^\]]+?)\]?:(\d+)$/.exec(server);
  if (!m) return Promise.reject(new Error(`Not a host:port address: ${server}`));
  return new Promise((resolve, reject) => {
    // Nothing is verified here, and nothing but the handshake happens: the chain is checked against the pin.
    const socket = connect({ host: m[1], port: Number(m[2]), servername: LINK_TLS_SERVER_NAME, rejectUnauthorized: false, ALPNProtocols: ["h2"], timeout: timeoutMs });
    socket.once("secureConnect", () => {
      const out: Buffer[] = [];
      let cert: PeerCertificate | DetailedPeerCertificate | undefined = socket.getPeerCertificate(true);
      const seen = new Set<string>();
      while (cert && cert.raw && !seen.has(cert.fingerprint256)) {
        seen.add(cert.fingerprint256);
        out.push(cert.raw);
        cert = (cert as DetailedPeerCertificate).issuerCertificate;
      }
      socket.destroy();
      resolve(out);
    });
    socket.once("timeout", () => {
      socket.destroy();
      reject(new Error(`The relay at ${server} did not answer a TLS handshake within ${timeoutMs / 1000} s.`));
    });
    socket.once("error", (err) => reject(new Error(`Cannot reach the relay at ${server} over TLS: ${err.message}`)));
  });
}
