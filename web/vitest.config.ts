import { defineConfig } from "vitest/config";

// One test file at a time: the machine has two cores, and the conformance and browser tests
// each keep an inference engine busy.
export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    pool: "forks",
    fileParallelism: false,
    testTimeout: 120_000,
    hookTimeout: 300_000,
    reporters: ["default"],
  },
});
