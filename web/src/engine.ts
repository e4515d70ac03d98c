/**
 * The one small interface between a bundle's encoder and an inference engine.
 *
 * An engine is given the model bytes the family check accepted and, for ONNX, encoder.weights,
 * which it hands to its runtime as the external data of the placeholder location; it then
 * embeds one text's token ids at a time (batching changes the int8 kernels' rounding) into D
 * floats. Everything around it (tokenizer, check text, scorer, error codes) is the Classifier's.
 * `seconds` is the time budget of that call (schema.json "encoder"); an engine that cannot
 * enforce it says so in `bounded`.
 *
 * Implementations: engines/onnxruntime.ts (any onnxruntime binding with onnxruntime-common's
 * API, in this process: onnxruntime-web, onnxruntime-react-native) and engines/node_process.ts
 * (onnxruntime-node in a child process, under time and memory budgets).
 */
import type { EncoderFormat } from "./reader.js";

/** What the bundle says about the model's inputs and output. */
export interface EngineIO {
  readonly inputs: readonly string[];
  readonly output: string;
  readonly dim: number;
}

/** The engine went over its time or memory budget (the Classifier refuses with engine.budget or query.engine). */
export class BudgetExceeded extends Error {}

/** The model's inputs or outputs are not the bundle's (engine.io); `path` is encoder.inputs or encoder.output. */
export class WrongIO extends Error {
  constructor(readonly path: string, message: string) {
    super(message);
  }
}

export interface Engine {
  /** Shown in info() and in messages, e.g. "onnxruntime-node 1.30.0". */
  readonly name: string;
  /** The encoder formats it runs. */
  readonly formats: readonly EncoderFormat[];
  /** What it bounds: "time and memory", "time", or "nothing". */
  readonly bounded: string;
  /** Load the model: throws WrongIO, BudgetExceeded, or any other Error when the model cannot be loaded. */
  load(model: Uint8Array, weights: Uint8Array, io: EngineIO, seconds: number): Promise<void>;
  /** The embedding of one text's token ids: throws BudgetExceeded, or any other Error on failure. */
  embed(tokenIds: readonly number[], seconds: number): Promise<Float32Array>;
  /** Free the engine's session (and its process). */
  release(): Promise<void>;
}

/** Makes a fresh engine for each Classifier (an engine holds one model). */
export type EngineFactory = () => Engine | Promise<Engine>;

/** An engine's message on one short line (escaped where it is shown: it may quote names from the model). */
export function oneLine(e: unknown, limit = 300): string {
  const text = String(e instanceof Error ? e.message : e).split(/\s+/).join(" ").trim();
  return text.length <= limit ? text : text.slice(0, limit - 3) + "...";
}
