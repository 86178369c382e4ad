import { defineConfig } from "vitest/config";

/** `npm run bench`'s scaled topology (bench/relays-topology.bench.ts): vitest runs it for its TypeScript and the tests' real servers. */
export default defineConfig({
  test: {
    include: ["bench/**/*.bench.ts"],
    fileParallelism: false,
    testTimeout: 900_000,
    hookTimeout: 120_000,
  },
});
