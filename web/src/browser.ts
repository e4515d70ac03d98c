/**
 * dpedge in a browser: read a bundle, classify texts with onnxruntime-web (WebAssembly). The
 * bundle and the texts stay in the page; the only files fetched are onnxruntime-web's own
 * WebAssembly module and its loader, from `wasmPaths` (default: beside this script).
 *
 *     import { Classifier } from "dpedge/browser";
 *     const bytes = new Uint8Array(await file.arrayBuffer());   // from <input type="file">
 *     const clf = await Classifier.load(bytes);
 *     const [p] = await clf.classify([text], { topK: 3 });
 *
 * Threads: onnxruntime-web runs its kernels on several threads only in a cross-origin isolated
 * page (served with Cross-Origin-Opener-Policy: same-origin and Cross-Origin-Embedder-Policy:
 * require-corp); elsewhere it uses one. The thread count is fixed when the first model loads.
 * Nothing bounds the engine's time or memory in a page (docs/web.md, "Engine budgets").
 */
import * as ort from "onnxruntime-web/wasm";
import { Classifier as Base } from "./classifier.js";
import type { EngineFactory } from "./engine.js";
import { OnnxRuntimeEngine } from "./engines/onnxruntime.js";

export interface WebEngineOptions {
  /** WebAssembly threads (default: all cores when the page is cross-origin isolated, else 1). */
  readonly threads?: number;
  /** Where ort-wasm-simd-threaded.{mjs,wasm} are served (default: the folder of this script). */
  readonly wasmPaths?: string;
}

let configured: string | null = null;

/** onnxruntime-web on WebAssembly. */
export function webEngine(options: WebEngineOptions = {}): EngineFactory {
  return () => {
    if (configured === null) {
      const isolated = (globalThis as { crossOriginIsolated?: boolean }).crossOriginIsolated === true;
      const cores = (globalThis.navigator?.hardwareConcurrency as number | undefined) ?? 1;
      ort.env.wasm.numThreads = isolated ? (options.threads ?? cores) : 1;
      ort.env.wasm.wasmPaths = options.wasmPaths ?? new URL("./", import.meta.url).href;
      ort.env.logLevel = "error";
      configured = `${ort.env.wasm.numThreads} thread${ort.env.wasm.numThreads === 1 ? "" : "s"}`;
    }
    return new OnnxRuntimeEngine(ort, `onnxruntime-web ${ort.env.versions.web} (wasm, ${configured})`, { executionProviders: ["wasm"] });
  };
}

/** The Classifier with onnxruntime-web as its default engine. */
export class Classifier extends Base {
  protected static override defaultEngine(): EngineFactory {
    return webEngine();
  }
}

export * from "./common.js";
