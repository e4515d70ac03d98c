/**
 * Builds the Web Worker classifier beside what scripts/build.mjs builds (run it after that
 * script, which empties demo/vendor):
 *
 * - demo/vendor/worker.js: WorkerClassifier (src/worker.ts), what the demo page imports;
 * - demo/vendor/worker-script.js: the worker itself (src/worker_script.ts: the runtime and
 *   onnxruntime-web's JavaScript in one module; its WebAssembly loader and binary are the ones
 *   build.mjs copies beside it).
 *
 * The package's dist/worker.js and dist/worker-script.js are build.mjs's own.
 *
 *     node scripts/build_worker.mjs
 */
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const WEB = fileURLToPath(new URL("..", import.meta.url));

export async function buildWorker() {
  const VENDOR = join(WEB, "demo", "vendor");
  const common = { bundle: true, format: "esm", platform: "browser", target: "es2022", logLevel: "warning" };
  for (const [entry, out] of [["worker", "worker"], ["worker_script", "worker-script"]]) {
    await build({ ...common, entryPoints: [join(WEB, "src", `${entry}.ts`)], minify: true, sourcemap: true,
      conditions: ["onnxruntime-web-use-extern-wasm"], outfile: join(VENDOR, `${out}.js`) });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await buildWorker();
  console.log("built the worker: demo/vendor/worker.js and worker-script.js");
}
