/**
 * An Engine over an onnxruntime JavaScript binding in this process: onnxruntime-web
 * (WebAssembly), onnxruntime-node, or onnxruntime-react-native, which share
 * onnxruntime-common's InferenceSession API. Nothing is bounded: a run cannot be stopped from
 * the thread that waits for it (Node's default engine, engines/node_process.ts, runs the same
 * session in a child process that can be killed).
 *
 * The bundle's ONNX model keeps its initializers' data in encoder.weights as external data under
 * the placeholder location; the weights are handed over from memory with the `externalData`
 * session option under that name, so the engine never opens a file.
 */
import { onnxSessionExtra, SCHEMA } from "../contract.js";
import { WrongIO, oneLine, type Engine, type EngineIO } from "../engine.js";

/*
 * The part of onnxruntime-common's API this runtime uses, stated here rather than imported, so
 * that the package's types check without any onnxruntime package installed (each engine is an
 * optional peer dependency). onnxruntime-web, -node and -react-native's modules satisfy it.
 */

/** An onnxruntime tensor, as far as this runtime reads one. */
export interface OrtTensor {
  readonly type: string;
  readonly dims: readonly number[];
  readonly data: unknown;
  dispose(): void;
}

/** Session options this runtime sets (onnxruntime-common's InferenceSession.SessionOptions has these and more). */
export interface OrtSessionOptions {
  executionProviders?: readonly unknown[];
  intraOpNumThreads?: number;
  interOpNumThreads?: number;
  graphOptimizationLevel?: "disabled" | "basic" | "extended" | "layout" | "all";
  logSeverityLevel?: 0 | 1 | 2 | 3 | 4;
  externalData?: readonly unknown[];
  extra?: Record<string, unknown>;
}

/** An onnxruntime inference session, as far as this runtime uses one. */
export interface OrtSession {
  readonly inputNames: readonly string[];
  readonly outputNames: readonly string[];
  run(feeds: Record<string, OrtTensor>, fetches: readonly string[]): Promise<Record<string, OrtTensor>>;
  release(): Promise<void>;
}

/** The part of an onnxruntime binding this engine uses (`import * as ort from "onnxruntime-web"` is one). */
export interface OrtModule {
  readonly InferenceSession: { create(model: Uint8Array, options?: OrtSessionOptions): Promise<OrtSession> };
  readonly Tensor: new (type: "int64", data: BigInt64Array, dims: readonly number[]) => OrtTensor;
}

export const WEIGHTS_LOCATION = SCHEMA.onnx.weights_location.padEnd(SCHEMA.onnx.weights_location_bytes, ".");

/**
 * An onnxruntime session of a bundle's encoder, checked against the bundle's inputs and output.
 * `more`: external data besides the bundle's weights (a model rewritten by the engine names it).
 */
export async function createSession(ort: OrtModule, model: Uint8Array, weights: Uint8Array, io: EngineIO,
                                    options: OrtSessionOptions,
                                    more: readonly { path: string; data: Uint8Array }[] = []): Promise<OrtSession> {
  const external = [...(weights.length ? [{ path: WEIGHTS_LOCATION, data: weights }] : []), ...more];
  const session = await ort.InferenceSession.create(model, {
    graphOptimizationLevel: "all", interOpNumThreads: 1, logSeverityLevel: 4, extra: onnxSessionExtra(), ...options,
    ...(external.length ? { externalData: external } : {}),
  });
  const have = [...session.inputNames].sort().join(", ");
  const want = [...io.inputs].sort().join(", ");
  if (have !== want) throw new WrongIO("encoder.inputs", `the model's inputs are ${have}, the bundle's ${want}`);
  if (!session.outputNames.includes(io.output)) throw new WrongIO("encoder.output", `the model has no output ${io.output}`);
  return session;
}

/** One run: the embedding of one text's token ids (D float32 values, unchecked; empty if the output is not float32 [1, D]). */
export async function run(ort: OrtModule, session: OrtSession, io: EngineIO, ids: readonly number[]): Promise<Float32Array> {
  const n = ids.length;
  const fill: Record<string, (i: number) => bigint> = { input_ids: (i) => BigInt(ids[i]!), attention_mask: () => 1n, token_type_ids: () => 0n };
  const feeds = Object.fromEntries(io.inputs.map((name) =>
    [name, new ort.Tensor("int64", BigInt64Array.from({ length: n }, (_, i) => fill[name]!(i)), [1, n])]));
  try {
    const out = (await session.run(feeds, [io.output]))[io.output]!;
    // Not float32 [1, D]: no embedding (the Classifier refuses it with query.embedding).
    const ok = out.type === "float32" && out.dims.length === 2 && out.dims[0] === 1;
    const data = ok ? Float32Array.from(out.data as Float32Array) : new Float32Array(0);
    out.dispose();
    return data;
  } finally {
    for (const t of Object.values(feeds)) t.dispose();
  }
}

export class OnnxRuntimeEngine implements Engine {
  readonly formats = ["onnx"] as const;
  readonly bounded = "nothing";
  private session: OrtSession | null = null;
  private io: EngineIO | null = null;

  /**
   * @param ort the binding's module (`import * as ort from "onnxruntime-web"`)
   * @param name what info() shows, e.g. "onnxruntime-web 1.30.0"
   * @param options session options added to the engine's own (threads, execution providers)
   */
  constructor(private readonly ort: OrtModule, readonly name: string,
              private readonly options: OrtSessionOptions = {}) {}

  async load(model: Uint8Array, weights: Uint8Array, io: EngineIO): Promise<void> {
    const given = this.prepare(model, weights);
    this.session = await createSession(this.ort, given.model, weights, io, this.options, given.more);
    this.io = io;
  }

  /** The model the session is created from, and external data it names besides the weights (this engine: the model as it is). */
  protected prepare(model: Uint8Array, weights: Uint8Array): { model: Uint8Array; more: { path: string; data: Uint8Array }[] } {
    void weights;
    return { model, more: [] };
  }

  async embed(tokenIds: readonly number[]): Promise<Float32Array> {
    if (this.session === null || this.io === null) throw new Error("the engine has no model loaded");
    try {
      return await run(this.ort, this.session, this.io, tokenIds);
    } catch (e) {
      throw new Error(oneLine(e));
    }
  }

  async release(): Promise<void> {
    await this.session?.release();
    this.session = null;
  }
}
