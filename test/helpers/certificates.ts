import { execFileSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** PEM files an operator's own CA would give: `ca` (the CA's certificate), `cert` and `key` (a server's, for 127.0.0.1). */
export interface OperatorCertificates {
  dir: string;
  ca: string;
  cert: string;
  key: string;
}

/** A CA and a server certificate for 127.0.0.1, made with openssl in a new temporary directory (the caller removes it). */
export function operatorCertificates(names: string[] = []): OperatorCertificates {
  const dir = mkdtempSync(join(tmpdir(), "makina-certs-"));
  const openssl = (...args: string[]) => execFileSync("openssl", args, { cwd: dir, stdio: "pipe" });
  openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=Operator CA");
  openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1");
  writeFileSync(join(dir, "ext.cnf"), `subjectAltName=${["IP:127.0.0.1", ...names.map((n) => `DNS:${n}`)].join(",")}\n`);
  openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out", "server.pem", "-days", "2", "-extfile", "ext.cnf");
  return { dir, ca: join(dir, "ca.pem"), cert: join(dir, "server.pem"), key: join(dir, "server.key") };
}
