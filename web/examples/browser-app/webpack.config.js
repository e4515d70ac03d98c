/**
 * The webpack 5 build, dist/webpack/: webpack's defaults do the rest. It bundles the worker that
 * dpedge/worker starts (`new Worker(new URL(...))` in the package) and emits onnxruntime-web's
 * WebAssembly file (`new URL(..., import.meta.url)`) as asset modules. What is here is the app's
 * own: TypeScript through esbuild-loader, and the page naming the script.
 *
 *     npm run build:webpack      # then serve dist/webpack/ with a bundle at bundle.dpedge
 */
import { fileURLToPath } from "node:url";
import { writePage } from "./page.mjs";

const out = fileURLToPath(new URL("dist/webpack", import.meta.url));

export default {
  mode: "production",
  entry: "./src/main.ts",
  output: { path: out, filename: "app.js", clean: true },
  resolve: { extensions: [".ts", "..."] },
  module: { rules: [{ test: /\.ts$/, loader: "esbuild-loader", options: { target: "es2022" } }] },
  // onnxruntime-web's WebAssembly file is 13.6 MiB: the app knows, no need for webpack's size hints.
  performance: { hints: false },
  plugins: [{ apply: (compiler) => compiler.hooks.afterEmit.tap("page", () => writePage(out, "app.js")) }],
};
