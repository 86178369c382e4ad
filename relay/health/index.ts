export { storageError, neverReachedDatabase, StorageHealth } from "./storage-health.js";
