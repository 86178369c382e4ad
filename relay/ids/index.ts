export { randomBase62, newId, PooledBase62 } from "./ids.js";
