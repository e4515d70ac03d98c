/**
 * Builds the Web Worker classifier beside what scripts/build.mjs builds (run it after that
 * script, which empties demo/vendor):
 *
 * - demo/vendor/worker.js: WorkerClassifier (src/worker.ts), what the demo page imports;
 * - demo/vendor/worker-script.js: the worker itself (src/worker_script.ts: the runtime and
 *   onnxruntime-web's JavaScript in one module; its WebAssembly loader and binary are the ones
 *   build.mjs copies beside it);
 * - with --dist, dist/worker.js and dist/worker-script.js (the engine's package stays an import).
 *
 *     node scripts/build_worker.mjs [--dist]
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const WEB = fileURLToPath(new URL("..", import.meta.url));

export async function buildWorker({ dist = false } = {}) {
  const VENDOR = join(WEB, "demo", "vendor");
  const common = { bundle: true, format: "esm", platform: "browser", target: "es2022", sourcemap: true, logLevel: "warning" };
  for (const [entry, out] of [["worker", "worker"], ["worker_script", "worker-script"]]) {
    await build({ ...common, entryPoints: [join(WEB, "src", `${entry}.ts`)], minify: true,
      conditions: ["onnxruntime-web-use-extern-wasm"], outfile: join(VENDOR, `${out}.js`) });
    if (dist && existsSync(join(WEB, "dist"))) {
      await build({ ...common, entryPoints: [join(WEB, "src", `${entry}.ts`)], packages: "external", outfile: join(WEB, "dist", `${out}.js`) });
    }
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await buildWorker({ dist: process.argv.includes("--dist") });
  console.log("built demo/vendor/worker.js and worker-script.js" + (process.argv.includes("--dist") ? " (and dist/)" : ""));
}
