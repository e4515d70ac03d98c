/**
 * Bundles src/main.ts (with dpedge/browser and onnxruntime-web) into dist/app.js with esbuild,
 * and dpedge/worker-script (the Web Worker of dpedge/worker) into dist/worker-script.js,
 * copies index.html, and copies onnxruntime-web's WebAssembly file beside the script: esbuild
 * does not emit files named by `new URL(..., import.meta.url)`, so this is the one step an
 * esbuild app adds (Vite and webpack emit the file themselves).
 *
 *     npm run build      # then serve dist/ with a bundle at dist/bundle.dpedge
 */
import { copyFileSync, mkdirSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { build } from "esbuild";

const out = "dist";
mkdirSync(out, { recursive: true });
await build({ entryPoints: ["src/main.ts"], bundle: true, format: "esm", platform: "browser", target: "es2022",
  minify: true, outfile: join(out, "app.js"), logLevel: "warning" });
// The Web Worker dpedge/worker starts (?worker): esbuild does not follow `new Worker(new URL(...))`,
// so the worker script is an entry of its own, beside app.js, whose URL the page gives.
await build({ entryPoints: ["dpedge/worker-script"], bundle: true, format: "esm", platform: "browser", target: "es2022",
  minify: true, outfile: join(out, "worker-script.js"), logLevel: "warning" });
copyFileSync("index.html", join(out, "index.html"));
const ortDist = dirname(createRequire(import.meta.url).resolve("onnxruntime-web/ort-wasm-simd-threaded.wasm"));
copyFileSync(join(ortDist, "ort-wasm-simd-threaded.wasm"), join(out, "ort-wasm-simd-threaded.wasm"));
console.log(`built ${out}/: app.js, worker-script.js, index.html, ort-wasm-simd-threaded.wasm`);
