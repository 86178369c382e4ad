import { isLinkAddress } from "./link/index.js";
import { SECRETS_KEY_FORMAT, SECRETS_KEY_SHAPE } from "./vault/index.js";

type EnvNames = Readonly<Record<"publicUrl" | "publicGrpcAddress" | "publicAddress" | "secretsKey" | "secretsKeyFile", string>>;

/** What is wrong with the addresses install commands print: each goes into a line a person runs as root, so a host (and port), nothing else. */
export function printedAddressProblems(publicUrl: string | null, publicGrpcAddress: string | null, publicAddress: string | null, ENV: EnvNames): string[] {
  const problems: string[] = [];
  const host = publicUrl === null ? undefined : /^https?:\/\/(.+)$/.exec(publicUrl.replace(/\/+$/, ""))?.[1];
  if (publicUrl !== null && !(host && (isLinkAddress(host) || isLinkAddress(`${host}:443`)))) problems.push(`publicUrl (${ENV.publicUrl}) must be an http(s) URL without a path, such as https://makina.example.com`);
  if (publicGrpcAddress !== null && !isLinkAddress(publicGrpcAddress)) problems.push(`publicGrpcAddress (${ENV.publicGrpcAddress}) must be host:port, such as relay.example.com:8081`);
  const bare = publicAddress?.replace(/^\[(.*)\]$/, "$1");
  if (bare !== undefined && !(isLinkAddress(`${bare}:1`) || isLinkAddress(`[${bare}]:1`))) problems.push(`publicAddress (${ENV.publicAddress}) must be a host name or an IP address other machines reach this one at, such as 10.0.0.5 or relay.example.com (no port, no scheme)`);
  return problems;
}

/** What is wrong with how the secrets key is given: one way only, and the key itself (never echoed) of the right shape. */
export function secretsKeyProblems(secretsKey: string | null, secretsKeyFile: string | null, ENV: EnvNames): string[] {
  const problems: string[] = [];
  if (secretsKey !== null && secretsKeyFile !== null) problems.push(`give the secrets key one way: secretsKeyFile (${ENV.secretsKeyFile}) or ${ENV.secretsKey}, not both`);
  if (secretsKey !== null && !SECRETS_KEY_SHAPE.test(secretsKey)) problems.push(`${ENV.secretsKey} is not a secrets key: it must be ${SECRETS_KEY_FORMAT}`);
  return problems;
}
