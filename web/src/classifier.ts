/**
 * The runtime's facade (runtime/classifier.py): load a bundle once, then classify texts on the
 * device. Everything it does reads only the released bundle, so it is post-processing: any
 * number of queries costs no further privacy budget, and no text leaves the process.
 *
 *     const clf = await Classifier.load(bytes);                 // Node: onnxruntime-node
 *     const [p] = await clf.classify(["wake me up at six"], { topK: 2 });
 *     p.label, p.top;                                           // "alarm_timer", [{label, score}, ...]
 *
 * Loading reads and validates the bundle (readBundle), refuses a TFLite encoder (no JavaScript
 * engine runs it: docs/web.md), builds the tokenizer, loads the model into the engine and
 * embeds the bundle's check text: an engine whose embedding is not the exporter's (cosine
 * below 0.98) is refused, since its answers would be wrong.
 */
import type { Engine, EngineFactory } from "./engine.js";
import { BundleError, InputError } from "./errors.js";
import { bundleInfo, privacySummary } from "./describe.js";
import { CHECK_MIN_COSINE } from "./generated/schema.js";
import { readBundle, type Bundle } from "./reader.js";
import { argmax, Scorer } from "./scoring.js";
import { pyStrip, pyLen, uPlus } from "./text.js";
import { TextTokenizer } from "./tokenizer.js";
import { checkTokenizerJson } from "./tokenizer_family.js";

/** Texts longer than this (in characters) are refused rather than tokenized (runtime/classifier.py). */
export const MAX_TEXT_CHARS = 1_000_000;

/** Why TFLite bundles are refused, in one line (docs/web.md has the measurement). */
export const TFLITE_REFUSED =
  "this bundle's encoder is TFLite, which the JavaScript runtime does not run: LiteRT.js (@litertjs/core 2.5.3) " +
  "compiles it, but its input_ids are [1, -1] (any length) and LiteRT.js runs no concrete shape of them (nor " +
  "loads at all in Node); build the bundle with the ONNX encoder, the exporter's default";

export interface LabelScore {
  readonly label: string;
  readonly score: number;
}

/** A label and the score of every label, higher is better (docs/bundle-format.md section 7). */
export interface Prediction {
  readonly label: string;
  /** Every label's score, in the bundle's label order. */
  readonly scores: readonly LabelScore[];
  /** The topK best labels, best first (ties keep label order). */
  readonly top: readonly LabelScore[];
}

export interface LoadOptions {
  /** Makes the engine (the entry point's default: onnxruntime-node in Node, onnxruntime-web in a browser). */
  readonly engine?: EngineFactory;
}

/** Returns the text if it can be classified, else throws InputError saying why. */
export function checkText(text: unknown): string {
  if (typeof text !== "string") throw new InputError(`text must be a string, got ${text === null ? "null" : typeof text}`);
  if (!pyStrip(text)) throw new InputError("empty text: there is nothing to classify");
  const n = pyLen(text);
  if (n > MAX_TEXT_CHARS) throw new InputError(`text has ${n} characters, over the limit of ${MAX_TEXT_CHARS}`);
  const lone = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.exec(text);
  if (lone) {
    throw new InputError(`not valid Unicode (lone surrogate ${uPlus(lone[0].charCodeAt(0))} at character ` +
      `${pyLen(text.slice(0, lone.index))})`);
  }
  return text;
}

function cosine(a: Float32Array, b: Float32Array): number {
  let ab = 0;
  let aa = 0;
  let bb = 0;
  for (let i = 0; i < a.length; i++) {
    ab += a[i]! * b[i]!;
    aa += a[i]! * a[i]!;
    bb += b[i]! * b[i]!;
  }
  return ab / (Math.sqrt(aa) * Math.sqrt(bb) + 1e-12);
}

export class Classifier {
  readonly labels: readonly string[];
  /** Cosine between this engine's and the exporter's embedding of the check text. */
  checkCosine = 0;

  protected constructor(readonly bundle: Bundle, private readonly tokenizer: TextTokenizer,
                      private readonly engine: Engine, readonly scorer: Scorer, private readonly fileBytes: number) {
    this.labels = bundle.labels;
  }

  /**
   * Read, validate and prepare a bundle; throws BundleError (one line) if it is unusable. The
   * bytes are copied: the caller may reuse its buffer.
   */
  static async load(bytes: Uint8Array | ArrayBuffer, options: LoadOptions = {}): Promise<Classifier> {
    const bundle = await readBundle(bytes);
    return this.fromBundle(bundle, options, bytes.byteLength);
  }

  /** The engine when none is given: each entry point's subclass names its own. */
  protected static defaultEngine(): EngineFactory | undefined {
    return undefined;
  }

  /** Prepare an already read bundle. */
  static async fromBundle(bundle: Bundle, options: LoadOptions = {}, fileBytes = 0): Promise<Classifier> {
    const engineFactory = options.engine ?? this.defaultEngine();
    if (engineFactory === undefined) {
      throw new BundleError("no engine given: import Classifier from \"dpedge\" (Node) or \"dpedge/browser\", or pass { engine }");
    }
    const e = bundle.encoder;
    if (e.format === "tflite") throw new BundleError(TFLITE_REFUSED);
    const tokenizer = new TextTokenizer(e.tokenizerJson, checkTokenizerJson(e.tokenizerJson), e.maxLength, e.textPrefix);
    const engine = await engineFactory();
    await engine.load(e.model, e.weights, { format: e.format, inputs: e.inputs, output: e.output, dim: e.dim });
    const clf = new Classifier(bundle, tokenizer, engine, new Scorer(bundle), fileBytes);
    try {
      clf.checkCosine = await clf.verify();
    } catch (err) {
      await engine.release();
      throw err;
    }
    return clf;
  }

  /** The engine's name, e.g. "onnxruntime-web 1.30.0 (wasm, 2 threads)". */
  get engineName(): string {
    return this.engine.name;
  }

  /** Embed the check text and compare with the exporter's embedding (runtime/encoder.py verify). */
  private async verify(): Promise<number> {
    let ids: number[];
    try {
      ids = this.tokenizer.encode(this.bundle.encoder.checkText);
    } catch (err) {
      throw new BundleError(`the bundle's tokenizer fails at load: ${(err as Error).message}`);
    }
    let emb: Float32Array;
    try {
      emb = await this.embedIds(ids);
    } catch (err) {
      throw new BundleError(`the bundle's encoder fails at load on the ${this.engine.name} engine: ${(err as Error).message}`);
    }
    const cos = cosine(emb, this.bundle.encoder.checkEmbedding);
    if (!(cos >= CHECK_MIN_COSINE)) {
      throw new BundleError(`the ${this.engine.name} engine computes a different embedding than the exporter did for the ` +
        `bundle's check text (cosine ${cos.toFixed(3)} < ${CHECK_MIN_COSINE}): this engine cannot run the encoder ` +
        "correctly, so its answers would be wrong.");
    }
    return cos;
  }

  /** Token ids of one text (the bundle's prefix, [CLS] ... [SEP], truncated). */
  tokenize(text: string): number[] {
    return this.tokenizer.encode(checkText(text));
  }

  private async embedIds(ids: readonly number[]): Promise<Float32Array> {
    const emb = await this.engine.embed(ids);
    if (!(emb instanceof Float32Array) || emb.length !== this.bundle.encoder.dim) {
      throw new InputError(`the encoder returned ${emb?.length} values, expected ${this.bundle.encoder.dim}`);
    }
    for (const v of emb) if (!Number.isFinite(v)) throw new InputError("the encoder returned a non-finite embedding (NaN or infinity)");
    return emb;
  }

  /** Unit-vector embeddings, one engine run per text; throws InputError naming a bad text. */
  async embed(texts: readonly string[]): Promise<Float32Array[]> {
    texts.forEach((t, i) => {
      try {
        checkText(t);
      } catch (err) {
        throw new InputError(`text ${i}: ${(err as Error).message}`);
      }
    });
    const out: Float32Array[] = [];
    for (const t of texts) {
      try {
        out.push(await this.embedIds(this.tokenizer.encode(t)));
      } catch (err) {
        if (err instanceof InputError) throw err;
        throw new InputError(`the encoder failed on this text: ${(err as Error).message}`);
      }
    }
    return out;
  }

  /** Scores of an embedding (D floats) against the bundle. */
  score(embedding: ArrayLike<number>, topK = 1): Prediction {
    const scores = this.scorer.scores(embedding);
    const all = this.labels.map((label, i) => ({ label, score: scores[i]! }));
    const top = [...all].sort((a, b) => b.score - a.score).slice(0, Math.max(1, topK));
    return { label: this.labels[argmax(scores)]!, scores: all, top };
  }

  /** Label and per-label scores for each text (argmax; ties go to the earlier label). */
  async classify(texts: readonly string[], options: { topK?: number } = {}): Promise<Prediction[]> {
    const embeddings = await this.embed(texts);
    return embeddings.map((e) => this.score(e, options.topK ?? 1));
  }

  /** What the bundle is: labels, privacy facts, hashing, encoder, sizes; the engine and the check's cosine. */
  info(): Record<string, unknown> {
    return {
      ...bundleInfo(this.bundle, this.fileBytes || undefined),
      privacy_summary: privacySummary(this.bundle),
      engine: this.engine.name,
      check_cosine: this.checkCosine,
    };
  }

  /** Free the engine's session. */
  async close(): Promise<void> {
    await this.engine.release();
  }
}
