import { createCipheriv, createDecipheriv, createHmac, createSecretKey, hkdfSync, randomBytes, type KeyObject } from "node:crypto";

/** What a sealed value starts with: the format's version. */
const PREFIX = "mks1";
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** A value that is not a secrets key, or a sealed value this key cannot open; says which, never the key. */
export class SecretsKeyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "SecretsKeyError";
  }
}

/** How a secrets key is written: 32 random bytes in base64 (`openssl rand -base64 32`), base64url or hex. */
export const SECRETS_KEY_FORMAT = "32 random bytes in base64 or hex (openssl rand -base64 32)";
/** What such a key looks like. */
export const SECRETS_KEY_SHAPE = /^(?:[0-9a-fA-F]{64}|[A-Za-z0-9+/_-]{43}=?)$/;

/** Whether a setting's value is sealed (as opposed to one written in clear by a relay of an earlier version). */
export function isSealed(value: string): boolean {
  return value.startsWith(`${PREFIX}.`);
}

/** The id of the key a sealed value was sealed with (undefined for a value in clear). */
export function sealedKeyId(value: string): string | undefined {
  return isSealed(value) ? value.split(".")[1] : undefined;
}

/**
 * The key the relay's secrets are sealed with in the database (AES-256-GCM): it lives outside the database (a
 * file, or the environment), so a dump, a backup or a read-only role of the database alone yields no secret.
 * Each value is sealed with a fresh random nonce and bound to its setting's name, so a value copied onto another
 * setting does not open. The key's id (an HMAC of a constant, 12 hex digits) names it without revealing it.
 */
export class SecretsKey {
  readonly id: string;
  private readonly aead: KeyObject;

  private constructor(private readonly bytes: Buffer) {
    this.id = createHmac("sha256", bytes).update("makina secrets key id").digest("hex").slice(0, 12);
    this.aead = createSecretKey(Buffer.from(hkdfSync("sha256", bytes, Buffer.alloc(0), "makina secrets v1", 32)));
  }

  /** A new random key. */
  static generate(): SecretsKey {
    return new SecretsKey(randomBytes(32));
  }

  /** The key written in `text` (surrounding whitespace ignored); `where` names it in the error. */
  static parse(text: string, where: string): SecretsKey {
    const t = text.trim();
    const bytes = !SECRETS_KEY_SHAPE.test(t) ? undefined : t.length === 64 ? Buffer.from(t, "hex") : Buffer.from(t, "base64");
    if (!bytes || bytes.length !== 32) throw new SecretsKeyError(`${where} is not a secrets key: it must be ${SECRETS_KEY_FORMAT}`);
    return new SecretsKey(bytes);
  }

  /** The key as written in a key file. */
  text(): string {
    return this.bytes.toString("base64");
  }

  /** `value` sealed for the setting `name`. */
  seal(name: string, value: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv("aes-256-gcm", this.aead, iv);
    cipher.setAAD(this.aad(name));
    const body = Buffer.concat([iv, cipher.update(value, "utf8"), cipher.final(), cipher.getAuthTag()]);
    return `${PREFIX}.${this.id}.${body.toString("base64url")}`;
  }

  /** The value sealed for `name`; throws a {@link SecretsKeyError} when it was sealed with another key, for another name, or altered. */
  open(name: string, sealed: string): string {
    const [prefix, id, body] = sealed.split(".");
    if (prefix !== PREFIX || body === undefined) throw new SecretsKeyError(`the setting ${name} is not sealed`);
    if (id !== this.id) throw new SecretsKeyError(`the setting ${name} is sealed with the secrets key ${id}, not with this one (${this.id})`);
    const bytes = Buffer.from(body, "base64url");
    if (bytes.length < IV_BYTES + TAG_BYTES) throw new SecretsKeyError(`the setting ${name} is damaged`);
    const decipher = createDecipheriv("aes-256-gcm", this.aead, bytes.subarray(0, IV_BYTES));
    decipher.setAAD(this.aad(name));
    decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES));
    try {
      return Buffer.concat([decipher.update(bytes.subarray(IV_BYTES, bytes.length - TAG_BYTES)), decipher.final()]).toString("utf8");
    } catch {
      throw new SecretsKeyError(`the setting ${name} does not open with the secrets key ${this.id}: it was altered, or sealed for another setting`);
    }
  }

  private aad(name: string): Buffer {
    return Buffer.from(`${PREFIX}.${this.id}.${name}`);
  }
}
