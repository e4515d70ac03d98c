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

export async function buildWorker({ demo = true, dist = false } = {}) {
  const VENDOR = join(WEB, "demo", "vendor");
  const common = { bundle: true, format: "esm", platform: "browser", target: "es2022", logLevel: "warning" };
  for (const [entry, out] of [["worker", "worker"], ["worker_script", "worker-script"]]) {
    if (demo) {
      await build({ ...common, entryPoints: [join(WEB, "src", `${entry}.ts`)], minify: true, sourcemap: true,
        conditions: ["onnxruntime-web-use-extern-wasm"], outfile: join(VENDOR, `${out}.js`) });
    }
    if (dist && existsSync(join(WEB, "dist"))) {
      // As dist/browser.js: the engine's package stays an import, the app's bundler places its
      // loader (one WebAssembly thread unless asked), no source maps (the sources are not shipped).
      await build({ ...common, entryPoints: [join(WEB, "src", `${entry}.ts`)], packages: "external", sourcemap: false,
        define: { DPEDGE_ORT_LOADER_MAY_BE_BUNDLED: "true" }, outfile: join(WEB, "dist", `${out}.js`) });
    }
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const dist = process.argv.includes("--dist");
  await buildWorker({ demo: !process.argv.includes("--no-demo"), dist });
  console.log("built the worker: demo/vendor/worker.js and worker-script.js" + (dist ? " (and dist/)" : ""));
}
