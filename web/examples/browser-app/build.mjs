/**
 * The esbuild build, dist/esbuild/: src/main.ts (with dpedge/browser, dpedge/worker and
 * onnxruntime-web) into app.js; "dpedge/worker-script" (the worker dpedge/worker starts) into
 * worker-script.js, an entry of its own because esbuild does not follow
 * `new Worker(new URL(...))`; the page; and onnxruntime-web's WebAssembly file beside the
 * scripts, because esbuild does not emit files named by `new URL(..., import.meta.url)`.
 * Those two steps are what an esbuild app adds (Vite and webpack 5 need neither).
 *
 *     npm run build:esbuild      # then serve dist/esbuild/ with a bundle at bundle.dpedge
 */
import { copyFileSync, mkdirSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { build } from "esbuild";
import { writePage } from "./page.mjs";

const out = join("dist", "esbuild");
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
const common = { bundle: true, format: "esm", platform: "browser", target: "es2022", minify: true, logLevel: "warning" };
await build({ ...common, entryPoints: ["src/main.ts"], outfile: join(out, "app.js"),
  define: { WORKER_SCRIPT: JSON.stringify("./worker-script.js") } });
await build({ ...common, entryPoints: ["dpedge/worker-script"], outfile: join(out, "worker-script.js") });
writePage(out, "app.js");
const ortDist = dirname(createRequire(import.meta.url).resolve("onnxruntime-web/ort-wasm-simd-threaded.wasm"));
copyFileSync(join(ortDist, "ort-wasm-simd-threaded.wasm"), join(out, "ort-wasm-simd-threaded.wasm"));
console.log(`built ${out}/: app.js, worker-script.js, index.html, ort-wasm-simd-threaded.wasm`);
