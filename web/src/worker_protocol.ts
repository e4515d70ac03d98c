/**
 * The messages between WorkerClassifier (src/worker.ts, the page's side) and the worker script
 * (src/worker_script.ts). Internal: an app uses WorkerClassifier, not these.
 */
import type { Prediction } from "./classifier.js";

/** A refusal as plain data (a message crosses to the page as structured clone, not as a class). */
export interface ErrorData {
  readonly name: string;
  readonly code: string;
  readonly path: string;
  readonly message: string;
}

/** One text's answer. */
export interface TextResult {
  /** Its index in the texts given to classify. */
  readonly index: number;
  /** The answer, or null when the text was refused (error). */
  readonly prediction: Prediction | null;
  /** Why the text was refused: query.empty (nothing readable), query.too_long, query.unicode, query.engine... */
  readonly error: ErrorData | null;
  /** Tokens the encoder read (the bundle's prefix, [CLS] and [SEP] included): at most encoder.max_length. */
  readonly tokens: number;
  /** Whether the text had more tokens than encoder.max_length: only the first ones were read. */
  readonly truncated: boolean;
  /** Milliseconds the worker spent on this text (tokenizing, the engine, scoring). */
  readonly ms: number;
}

export interface LoadRequest {
  readonly op: "load";
  readonly bytes: Uint8Array;
  readonly encoderPack?: Uint8Array;
  readonly threads?: number;
  readonly wasmPaths?: string;
  readonly timeScale?: number;
  readonly kernel?: "int8" | "float32" | "matmulnbits";
}

/**
 * Start onnxruntime-web and warm it up while the bundle is still downloading (WorkerClassifier.load
 * given a promise): the engine's settings of the load that follows, nothing of the bundle.
 */
export interface WarmRequest {
  readonly op: "warm";
  readonly threads?: number;
  readonly wasmPaths?: string;
  readonly kernel?: "int8" | "float32" | "matmulnbits";
}

export type Request =
  | LoadRequest
  | WarmRequest
  | { readonly op: "classify"; readonly job: number; readonly texts: readonly string[]; readonly topK: number }
  | { readonly op: "cancel"; readonly job: number }
  | { readonly op: "close" };

export interface Loaded {
  readonly op: "loaded";
  readonly info: Record<string, unknown>;
  readonly labels: readonly string[];
  readonly engine: string;
  readonly maxLength: number;
  readonly checkCosine: number;
  /** Milliseconds in the worker from the bytes received to the check text's answer. */
  readonly ms: number;
}

export type Reply =
  | Loaded
  /** The warm-up is over: whether it ran (false: it failed, and the load goes on as without it), and its milliseconds. */
  | { readonly op: "warmed"; readonly ok: boolean; readonly ms: number }
  | { readonly op: "failed"; readonly error: ErrorData }
  /** Results in order; several at once when texts answer faster than POST_MS apart. */
  | { readonly op: "results"; readonly job: number; readonly results: readonly TextResult[] }
  | { readonly op: "done"; readonly job: number; readonly cancelled: boolean }
  | { readonly op: "closed" };
