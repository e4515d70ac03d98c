/**
 * dpedge for Node: read a bundle, classify texts with onnxruntime-node (the same CPU kernels as
 * the Python runtime). The browser entry point is "dpedge/browser" (src/browser.ts).
 *
 *     import { readFile } from "node:fs/promises";
 *     import { Classifier } from "dpedge";
 *     const clf = await Classifier.load(await readFile("models/quickstart.dpedge"));
 *     console.log((await clf.classify(["wake me up at six"]))[0].label);
 */
import * as ort from "onnxruntime-node";
import { Classifier as Base } from "./classifier.js";
import type { EngineFactory } from "./engine.js";
import { OnnxRuntimeEngine } from "./engines/onnxruntime.js";

/** Version of the onnxruntime-node binding (its package.json is not importable as a module everywhere). */
const ORT_VERSION: string = (ort.env as { versions?: { node?: string; common?: string } }).versions?.node ??
  ort.env.versions?.common ?? "?";

/** onnxruntime-node on the CPU; `threads` per text (default: onnxruntime's, all cores). */
export function nodeEngine(options: { threads?: number } = {}): EngineFactory {
  return () => new OnnxRuntimeEngine(ort, `onnxruntime-node ${ORT_VERSION}`, {
    executionProviders: ["cpu"],
    ...(options.threads === undefined ? {} : { intraOpNumThreads: options.threads }),
  });
}

/** The Classifier with onnxruntime-node as its default engine. */
export class Classifier extends Base {
  protected static override defaultEngine(): EngineFactory {
    return nodeEngine();
  }
}

export * from "./common.js";
