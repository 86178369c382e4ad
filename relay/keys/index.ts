export { newSecret, hashSecret, hashesEqual, maskSecret, hashPassword, verifyPassword, type SecretPrefix } from "./secrets.js";
export { createApiKey, authenticateApiKey, publicKey, type KeyLookup, type NewApiKey, type PublicApiKey } from "./api-keys.js";
