export { SecretsKey, SecretsKeyError, SECRETS_KEY_FORMAT, SECRETS_KEY_SHAPE, isSealed, sealedKeyId } from "./secrets-key.js";
export { Vault, SECRETS_KEY_ID, type SecretShelf } from "./vault.js";
export { openVault, readSecretsKeyFile, writeSecretsKeyFile, secretsKeyFile, type SecretsKeySource, type OpenVaultOptions } from "./open-vault.js";
export { rotateSecrets } from "./rotate-secrets.js";
