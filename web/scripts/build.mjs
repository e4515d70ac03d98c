/**
 * Builds what the package ships and the demo page runs:
 *
 * - dist/: index.js (Node), browser.js, worker.js and worker-script.js (the Web Worker
 *   classifier and the worker it starts; the three browser entries share their modules in
 *   dist/chunks/), ES modules with format/1's schema.json and unicode.json inside (esbuild; the
 *   engines' packages stay imports, loaded when an engine is first needed), and the type
 *   declarations (tsc, which also type-checks). No source maps: the
 *   modules are not minified, and a map would point to sources (src/, format/1/*.json) that
 *   the package does not ship;
 * - demo/vendor/: dpedge.js (src/browser.ts and its dependencies in one ES module), the
 *   worker's two modules (scripts/build_worker.mjs) and
 *   onnxruntime-web's WebAssembly module and loader, served from the page's own origin (the
 *   page fetches nothing from anywhere else).
 *
 *     node scripts/build.mjs [--no-tsc] [--no-demo]
 *
 * --no-tsc builds demo/vendor alone; --no-demo builds dist/ alone (npm pack's prepack).
 */
import { execFileSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const WEB = fileURLToPath(new URL("..", import.meta.url));
const VENDOR = join(WEB, "demo", "vendor");

// `npm pack` in a fresh clone runs this (prepack) before anything is installed: say what to run
// instead of Node's "Cannot find package 'esbuild'".
if (!existsSync(join(WEB, "node_modules", "esbuild")) || !existsSync(join(WEB, "node_modules", ".bin", "tsc"))) {
  console.error("dpedge's web build needs its devDependencies (esbuild, typescript), which are not installed: " +
    "run `npm ci` in web/ first (or `make web-package` from the repository's root, which does both)");
  process.exit(1);
}
const { build } = await import("esbuild");
const { buildWorker } = await import("./build_worker.mjs");

if (!process.argv.includes("--no-tsc")) {
  rmSync(join(WEB, "dist"), { recursive: true, force: true });
  execFileSync(join(WEB, "node_modules", ".bin", "tsc"), ["-p", WEB, "--emitDeclarationOnly"], { stdio: "inherit" });
  // The engines' packages stay imports; the app's bundler places onnxruntime-web's loader, by
  // default inside the app's script (src/browser.ts: one WebAssembly thread unless asked).
  const common = { bundle: true, format: "esm", target: "es2022", packages: "external", sourcemap: false,
    define: { DPEDGE_ORT_LOADER_MAY_BE_BUNDLED: "true" }, logLevel: "warning" };
  await build({ ...common, platform: "node", entryPoints: [join(WEB, "src", "index.ts")], outfile: join(WEB, "dist", "index.js") });
  // dpedge/browser, dpedge/worker (WorkerClassifier) and dpedge/worker-script (the worker it
  // starts) share their modules as chunks: one DeploymentError class, so that an error the
  // worker reports is `instanceof` the class a page imports from dpedge/browser.
  await build({ ...common, platform: "browser", splitting: true, outdir: join(WEB, "dist"), chunkNames: "chunks/[name]-[hash]",
    entryPoints: { browser: join(WEB, "src", "browser.ts"), worker: join(WEB, "src", "worker.ts"), "worker-script": join(WEB, "src", "worker_script.ts") } });
}
if (process.argv.includes("--no-demo")) process.exit(0);
rmSync(VENDOR, { recursive: true, force: true });
mkdirSync(VENDOR, { recursive: true });
await build({
  entryPoints: [join(WEB, "src", "browser.ts")],
  bundle: true,
  format: "esm",
  platform: "browser",
  target: "es2022",
  minify: true,
  sourcemap: true,
  // onnxruntime-web's build that loads its WebAssembly loader as a separate module: its worker
  // threads then start from that small file, not from this bundle.
  conditions: ["onnxruntime-web-use-extern-wasm"],
  outfile: join(VENDOR, "dpedge.js"),
  logLevel: "warning",
});
for (const name of ["ort-wasm-simd-threaded.mjs", "ort-wasm-simd-threaded.wasm"]) {
  copyFileSync(join(WEB, "node_modules", "onnxruntime-web", "dist", name), join(VENDOR, name));
}
await buildWorker();
const size = (f) => (statSync(join(VENDOR, f)).size / 2 ** 20).toFixed(2);
console.log(`built demo/vendor: dpedge.js ${size("dpedge.js")} MiB, ort-wasm-simd-threaded.wasm ${size("ort-wasm-simd-threaded.wasm")} MiB`);
