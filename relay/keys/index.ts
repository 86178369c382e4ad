export { bearerToken } from "./bearer-token.js";
export { newSecret, hashSecret, hashesEqual, maskSecret, hashPassword, verifyPassword, type SecretPrefix } from "./secrets.js";
export { createApiKey, regenerateApiKey, MAX_OLD_SECRET_MS, authenticateApiKey, identifyApiKey, admitApiKey, publicKey, type NamedApiKey, type ApiKeyRecord, type KeyLookup, type NewApiKey, type PublicApiKey, type RefusedKey } from "./api-keys.js";
