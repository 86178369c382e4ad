import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // One real PostgreSQL server for the run (the relay's second database); test files make their own databases on it.
    globalSetup: ["test/global-setup.ts"],
    // After each test file: no socket, timer or child process it started is left (test/helpers/leak-check.ts).
    setupFiles: ["test/setup.ts"],
    // Inference tests share two cores: running files one at a time keeps llama.cpp's
    // threads from oversubscribing the machine (see ../shared/models/README.md).
    fileParallelism: false,
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
