/**
 * dpedge for Node: read a bundle, classify texts with onnxruntime-node (the same CPU kernels as
 * the Python runtime), run in a child process under the contract's time and memory budgets.
 * The browser entry point is "dpedge/browser" (src/browser.ts).
 *
 *     import { readFile } from "node:fs/promises";
 *     import { Classifier } from "dpedge";
 *     const clf = await Classifier.load(await readFile("models/quickstart.dpedge"));
 *     console.log((await clf.classify(["wake me up at six"]))[0].label);
 *     await clf.close();
 */
import { createRequire } from "node:module";
import { Classifier as Base } from "./classifier.js";
import { SCHEMA } from "./contract.js";
import type { EngineFactory } from "./engine.js";
import { OnnxRuntimeEngine } from "./engines/onnxruntime.js";
import { NodeProcessEngine } from "./engines/node_process.js";
import { DeploymentError } from "./errors.js";

export interface NodeEngineOptions {
  /** onnxruntime's threads per text (default: onnxruntime's, all cores). */
  readonly threads?: number;
  /** Run the session in this process: faster to start, but nothing bounds its time or memory (default: false). */
  readonly inProcess?: boolean;
  /** How much one run may grow the engine process's resident memory (default: schema.json's arena_bytes, 128 MiB). */
  readonly memoryBytes?: number;
}

/** onnxruntime-node on the CPU, by default in a child process under the time and memory budgets. */
export function nodeEngine(options: NodeEngineOptions = {}): EngineFactory {
  return async () => {
    const session = options.threads === undefined ? {} : { intraOpNumThreads: options.threads };
    let modulePath: string;
    try {
      modulePath = createRequire(import.meta.url).resolve("onnxruntime-node");
    } catch {
      throw new DeploymentError("onnxruntime-node, dpedge's engine in Node, is not installed: install it beside dpedge " +
        "(npm install onnxruntime-node@1.30.0; it is an optional peer dependency; ONNXRUNTIME_NODE_INSTALL=skip skips the " +
        "download of its GPU libraries, which dpedge does not use and which fails offline)");
    }
    if (options.inProcess) {
      const ort = await import("onnxruntime-node");
      return new OnnxRuntimeEngine(ort, `onnxruntime-node ${ort.env.versions.common} (in process)`, { executionProviders: ["cpu"], ...session });
    }
    return new NodeProcessEngine({ modulePath, session: { executionProviders: ["cpu"], ...session },
      memoryBytes: options.memoryBytes ?? SCHEMA.encoder.arena_bytes });
  };
}

/** The Classifier with onnxruntime-node as its default engine. */
export class Classifier extends Base {
  protected static override defaultEngine(): EngineFactory {
    return nodeEngine();
  }
}

export * from "./common.js";
