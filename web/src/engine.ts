/**
 * The one small interface between a bundle's encoder and an inference engine.
 *
 * An engine is given the model bytes the family check accepted and, for ONNX, the bundle's
 * encoder.weights, which it must hand to its runtime as the external data of the placeholder
 * location (WEIGHTS_LOCATION); it then embeds one text's token ids at a time (batching changes
 * the int8 kernels' rounding) into the model's output, D floats. Everything around it (the
 * tokenizer, the check text, the scorer) is the Classifier's.
 *
 * Implementations: engines/onnxruntime.ts over any onnxruntime JavaScript binding with the
 * onnxruntime-common API (onnxruntime-node in Node, onnxruntime-web in a browser, and the same
 * class over onnxruntime-react-native: docs/web.md says how).
 */

/** What the bundle says about the model's inputs and output (encoder.inputs, encoder.output, encoder.dim). */
export interface EngineIO {
  readonly format: "onnx" | "tflite";
  readonly inputs: readonly string[];
  readonly output: string;
  readonly dim: number;
}

export interface Engine {
  /** Shown in info() and in messages, e.g. "onnxruntime-node 1.30.0". */
  readonly name: string;
  /** Load the model; `weights` is encoder.weights for an ONNX model. Throws a BundleError (one line) on failure. */
  load(model: Uint8Array, weights: Uint8Array | undefined, io: EngineIO): Promise<void>;
  /** The embedding of one text's token ids, D floats. Throws an Error (one line) on failure. */
  embed(tokenIds: readonly number[]): Promise<Float32Array>;
  /** Free the engine's session. */
  release(): Promise<void>;
}

/** Makes a fresh engine for each Classifier (an engine holds one model). */
export type EngineFactory = () => Engine | Promise<Engine>;
