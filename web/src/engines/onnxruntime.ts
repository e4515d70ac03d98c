/**
 * An Engine over an onnxruntime JavaScript binding: onnxruntime-node (native CPU kernels, the
 * same as the Python runtime's), onnxruntime-web (WebAssembly) or onnxruntime-react-native,
 * which share onnxruntime-common's InferenceSession API.
 *
 * The bundle's ONNX model keeps its initializers' data in encoder.weights as external data under
 * the placeholder location; the weights are handed over from memory with the `externalData`
 * session option under that name, so the engine never opens a file. (onnxruntime-node 1.30
 * accepts this option too, although its documentation lists it for the web only: the Node
 * conformance test loads every golden bundle this way and gets the Python runtime's
 * embeddings bit for bit.)
 */
import type * as ortTypes from "onnxruntime-common";
import type { Engine, EngineIO } from "../engine.js";
import { BundleError } from "../errors.js";
import { WEIGHTS_LOCATION } from "../generated/schema.js";
import { pyRepr, pyStr } from "../pyrepr.js";
import { escape } from "../text.js";

/** The part of an onnxruntime binding this engine uses. */
export interface OrtModule {
  readonly InferenceSession: typeof ortTypes.InferenceSession;
  readonly Tensor: typeof ortTypes.Tensor;
  readonly env: ortTypes.Env;
}

/** An engine message on one short line, escaped (it may quote names from the bundle's model). */
export function oneLine(e: unknown, limit = 300): string {
  const text = String(e instanceof Error ? e.message : e).split(/\s+/).join(" ").trim();
  return escape(text.length <= limit ? text : text.slice(0, limit - 3) + "...");
}

export class OnnxRuntimeEngine implements Engine {
  private session: ortTypes.InferenceSession | null = null;
  private io: EngineIO | null = null;

  /**
   * @param ort the binding's module (`import * as ort from "onnxruntime-node"`)
   * @param name what info() shows, e.g. "onnxruntime-node 1.30.0"
   * @param options session options added to the engine's own (threads, execution providers)
   */
  constructor(private readonly ort: OrtModule, readonly name: string,
              private readonly options: ortTypes.InferenceSession.SessionOptions = {}) {}

  async load(model: Uint8Array, weights: Uint8Array | undefined, io: EngineIO): Promise<void> {
    if (io.format !== "onnx") throw new BundleError(`${this.name} runs ONNX encoders, not ${io.format}`);
    const options: ortTypes.InferenceSession.SessionOptions = {
      graphOptimizationLevel: "all",
      interOpNumThreads: 1,
      logSeverityLevel: 4,
      ...this.options,
      ...(weights && weights.length ? { externalData: [{ path: WEIGHTS_LOCATION, data: weights }] } : {}),
    };
    try {
      this.session = await this.ort.InferenceSession.create(model, options);
    } catch (e) {
      throw new BundleError(`the bundle's ONNX encoder cannot be loaded by ${this.name}: ${oneLine(e)}`);
    }
    const inputs = [...this.session.inputNames].sort();
    const wanted = [...io.inputs].sort();
    if (inputs.join("\0") !== wanted.join("\0")) {
      throw new BundleError(`encoder graph inputs ${escape(pyRepr(inputs))} differ from the bundle's ${escape(pyRepr(wanted))}`);
    }
    if (!this.session.outputNames.includes(io.output)) {
      throw new BundleError(`encoder graph has no output ${escape(pyStr(io.output))}`);
    }
    this.io = io;
  }

  async embed(tokenIds: readonly number[]): Promise<Float32Array> {
    const session = this.session;
    const io = this.io;
    if (session === null || io === null) throw new Error("the engine has no model loaded");
    const n = tokenIds.length;
    const tensor = (fill: (i: number) => bigint): ortTypes.Tensor =>
      new this.ort.Tensor("int64", BigInt64Array.from({ length: n }, (_, i) => fill(i)), [1, n]);
    const make: Record<string, () => ortTypes.Tensor> = {
      input_ids: () => tensor((i) => BigInt(tokenIds[i]!)),
      attention_mask: () => tensor(() => 1n),
      token_type_ids: () => tensor(() => 0n),
    };
    const feeds: Record<string, ortTypes.Tensor> = {};
    for (const name of io.inputs) feeds[name] = make[name]!();
    let out: ortTypes.Tensor;
    try {
      out = (await session.run(feeds, [io.output]))[io.output]!;
    } catch (e) {
      throw new Error(oneLine(e));
    } finally {
      for (const t of Object.values(feeds)) t.dispose();
    }
    try {
      if (out.type !== "float32" || out.dims.length !== 2 || out.dims[0] !== 1 || out.dims[1] !== io.dim) {
        throw new Error(`the encoder returned shape [${out.dims.join(", ")}] of ${out.type}, expected [1, ${io.dim}] float32`);
      }
      return Float32Array.from(out.data as Float32Array);
    } finally {
      out.dispose();
    }
  }

  async release(): Promise<void> {
    await this.session?.release();
    this.session = null;
  }
}
