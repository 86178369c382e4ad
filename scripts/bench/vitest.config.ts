import { defineConfig } from "vitest/config";

/** `npm run bench`'s scaled topology (scripts/bench/relays-topology.bench.ts): vitest runs it for its TypeScript and the tests' real servers. */
export default defineConfig({
  test: {
    include: ["scripts/bench/**/*.bench.ts"],
    fileParallelism: false,
    testTimeout: 900_000,
    hookTimeout: 120_000,
  },
});
