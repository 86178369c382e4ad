export { randomBase62, newId, PooledBase62, SortableIds } from "./ids.js";
