import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, randomBytes, X509Certificate } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import forge from "node-forge";
import { LINK_TLS_SERVER_NAME as LINK_SERVER_NAME } from "../../proto/index.js";

/** What the link's TLS server presents, and what agents pin. */
export interface LinkTls {
  /** The server's certificate followed by the CA's, PEM. */
  certChain: Buffer;
  privateKey: Buffer;
  /** The CA agents trust, PEM; absent when the relay was given its certificate. */
  caPem: string | null;
  /** SHA-256 of the CA certificate (DER), lowercase hex: what install commands carry as `--ca-sha256`. */
  caSha256: string | null;
}

/** SHA-256 of a PEM certificate's DER bytes, lowercase hex (what `openssl x509 -fingerprint -sha256` shows, without colons). */
export function certificateSha256(pem: string): string {
  return createHash("sha256").update(new X509Certificate(pem).raw).digest("hex");
}

/** Where the relay's own link certificates are kept in its data directory. */
function linkTlsFiles(dataDir: string) {
  const dir = join(dataDir, "tls");
  return { dir, ca: join(dir, "link-ca.pem"), caKey: join(dir, "link-ca.key"), cert: join(dir, "link.pem"), key: join(dir, "link.key") };
}

/** The relay's own link CA and certificate, as kept in the data directory (and, shared, in the database). */
export interface LinkCertificates {
  ca: string;
  caKey: string;
  cert: string;
  key: string;
}

/** The link certificates in the data directory, when all are there. */
export function readLinkCertificates(dataDir: string): LinkCertificates | undefined {
  const f = linkTlsFiles(dataDir);
  if (![f.ca, f.caKey, f.cert, f.key].every((p) => existsSync(p))) return undefined;
  return { ca: readFileSync(f.ca, "utf8"), caKey: readFileSync(f.caKey, "utf8"), cert: readFileSync(f.cert, "utf8"), key: readFileSync(f.key, "utf8") };
}

/** Writes link certificates into the data directory (keys readable by this user only). */
export function writeLinkCertificates(dataDir: string, made: LinkCertificates): void {
  const files = linkTlsFiles(dataDir);
  mkdirSync(files.dir, { recursive: true, mode: 0o700 });
  writeFileSync(files.caKey, made.caKey, { mode: 0o600 });
  writeFileSync(files.key, made.key, { mode: 0o600 });
  writeFileSync(files.ca, made.ca);
  writeFileSync(files.cert, made.cert);
  for (const f of [files.caKey, files.key]) chmodSync(f, 0o600);
}

/** The data directory's link certificates, made first when there are none. */
export function ensureLinkCertificates(dataDir: string): LinkCertificates {
  const found = readLinkCertificates(dataDir);
  if (found) return found;
  const made = makeLinkCertificates();
  writeLinkCertificates(dataDir, made);
  return made;
}

/**
 * The link's certificate: the one the relay was given (`--grpc-tls-cert`/`--grpc-tls-key`), else a private
 * CA and a server certificate made on first start and kept in `<dataDir>/tls` (keys readable by this user only).
 */
export function loadLinkTls(dataDir: string, given?: { certFile: string; keyFile: string }): LinkTls {
  if (given) {
    return { certChain: readFileSync(given.certFile), privateKey: readFileSync(given.keyFile), caPem: null, caSha256: null };
  }
  const { ca, cert, key } = ensureLinkCertificates(dataDir);
  return {
    certChain: Buffer.from(cert + ca),
    privateKey: Buffer.from(key),
    caPem: ca,
    caSha256: certificateSha256(ca),
  };
}

/** A new private CA (ten years) and a server certificate it signs (ten years) for {@link LINK_SERVER_NAME}. */
function makeLinkCertificates(): { ca: string; caKey: string; cert: string; key: string } {
  const keyPair = () => {
    const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
    const pem = privateKey.export({ type: "pkcs1", format: "pem" }).toString();
    return { pem, privateKey: forge.pki.privateKeyFromPem(pem), publicKey: forge.pki.publicKeyFromPem(publicKey.export({ type: "spki", format: "pem" }).toString()) };
  };
  const validity = (cert: forge.pki.Certificate) => {
    cert.serialNumber = `01${randomBytes(15).toString("hex")}`;
    cert.validity.notBefore = new Date(Date.now() - 60 * 60 * 1000);
    cert.validity.notAfter = new Date(Date.now() + 10 * 365 * 24 * 60 * 60 * 1000);
  };
  const caKeys = keyPair();
  const ca = forge.pki.createCertificate();
  ca.publicKey = caKeys.publicKey;
  validity(ca);
  const caName = [{ name: "commonName", value: `Makina link CA (${hostname()})` }];
  ca.setSubject(caName);
  ca.setIssuer(caName);
  ca.setExtensions([
    { name: "basicConstraints", cA: true, pathLenConstraint: 0, critical: true },
    { name: "keyUsage", keyCertSign: true, cRLSign: true, critical: true },
    { name: "subjectKeyIdentifier" },
  ]);
  ca.sign(caKeys.privateKey, forge.md.sha256.create());

  const serverKeys = keyPair();
  const cert = forge.pki.createCertificate();
  cert.publicKey = serverKeys.publicKey;
  validity(cert);
  cert.setSubject([{ name: "commonName", value: LINK_SERVER_NAME }]);
  cert.setIssuer(caName);
  cert.setExtensions([
    { name: "basicConstraints", cA: false, critical: true },
    { name: "keyUsage", digitalSignature: true, keyEncipherment: true, critical: true },
    { name: "extKeyUsage", serverAuth: true },
    { name: "subjectAltName", altNames: [{ type: 2, value: LINK_SERVER_NAME }] },
    { name: "authorityKeyIdentifier", keyIdentifier: ca.generateSubjectKeyIdentifier().getBytes() },
  ]);
  cert.sign(caKeys.privateKey, forge.md.sha256.create());
  return { ca: forge.pki.certificateToPem(ca), caKey: caKeys.pem, cert: forge.pki.certificateToPem(cert), key: serverKeys.pem };
}

/**
 * The pin of a TLS key, as `curl --pinnedpubkey` takes it: `sha256//` and the base64 SHA-256 of its public key
 * (SubjectPublicKeyInfo, DER). An install command carries it, so a machine checks the relay it fetches from
 * before it sends anything, whoever signed the certificate.
 */
export function publicKeyPin(privateKeyPem: Buffer): string {
  const spki = createPublicKey(createPrivateKey(privateKeyPem)).export({ type: "spki", format: "der" });
  return `sha256//${createHash("sha256").update(spki).digest("base64")}`;
}
