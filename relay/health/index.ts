export { storageError, StorageHealth } from "./storage-health.js";
