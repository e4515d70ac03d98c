/**
 * The runtime's facade: load a bundle once, then classify texts on the device. Everything it
 * does reads only the released bundle, so it is post-processing: any number of queries costs
 * no further privacy budget, and no text leaves the process.
 *
 *     const clf = await Classifier.load(bytes);                 // Node: onnxruntime-node
 *     const [p] = await clf.classify(["wake me up at six"], { topK: 2 });
 *     p.label, p.top;                                           // "alarm_timer", [{label, score}, ...]
 *
 * Loading reads and validates the bundle, refuses an encoder format the engine does not run
 * (engine.unavailable: no JavaScript engine runs TFLite), loads the model into the engine and
 * embeds the bundle's check text: an engine whose embedding is not the exporter's (cosine below
 * 0.98) is refused (engine.check), since its answers would be wrong.
 *
 * A statistics bundle (format 1.1) carries no encoder: it is loaded with the encoder pack it
 * names, `Classifier.load(bytes, { encoderPack })`, and runs the pack's encoder.
 */
import { SCHEMA } from "./contract.js";
import { bundleInfo, privacySummary } from "./describe.js";
import { BudgetExceeded, WrongIO, oneLine, type Engine, type EngineFactory } from "./engine.js";
import { BundleError, DpedgeError, InputError } from "./errors.js";
import { readBundle, readPack, type Bundle, type EncoderPack } from "./reader.js";
import { argmax, Scorer } from "./scoring.js";
import { escape, uPlus } from "./text.js";
import { TextTokenizer } from "./tokenizer.js";
import { cpLength, loneSurrogate } from "./unicode.js";

export interface LabelScore {
  readonly label: string;
  readonly score: number;
}

/** A label and the score of every label, higher is better. */
export interface Prediction {
  readonly label: string;
  /** Every label's score, in the bundle's label order (a distribution: they sum to 1). */
  readonly scores: readonly LabelScore[];
  /** The topK best labels, best first (ties keep label order). */
  readonly top: readonly LabelScore[];
}

export interface LoadOptions {
  /** Makes the engine (the entry point's default: onnxruntime-node in Node, onnxruntime-web in a browser). */
  readonly engine?: EngineFactory;
  /**
   * Stretches every time budget for a slow device, 1 to 1000 (default: $DPEDGE_TIME_SCALE where
   * there is a process environment, else 1). The user's choice: a bundle never changes its budgets.
   */
  readonly timeScale?: number;
  /**
   * The encoder pack a statistics bundle names (format 1.1): a pack from `readPack` (which can
   * hold the application to the digests it accepts), or the pack file's bytes. Only such a
   * bundle may be given one (pack.missing, pack.mismatch, pack.unexpected).
   */
  readonly encoderPack?: EncoderPack | Uint8Array | ArrayBuffer;
}

/** Returns the text if it may be tokenized, else throws InputError (query.type, query.too_long, query.unicode). */
export function checkText(text: unknown): string {
  if (typeof text !== "string") throw new InputError("query.type", "", `a query must be a string, not ${text === null ? "null" : typeof text}`);
  const n = cpLength(text);
  if (n > SCHEMA.query.max_chars) throw new InputError("query.too_long", "", `the query has ${n} code points, more than ${SCHEMA.query.max_chars}`);
  const at = loneSurrogate(text);
  if (at >= 0) throw new InputError("query.unicode", "", `the query is not valid Unicode: a lone surrogate ${uPlus(text.charCodeAt(at))}`);
  return text;
}

function timeScale(given: number | undefined): number {
  const env = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env?.["DPEDGE_TIME_SCALE"];
  const x = given ?? Number(env || 1);
  return x >= 1 && x <= 1000 ? x : 1;
}

/** The engine's answer as D finite floats, else InputError query.embedding. */
function checked(emb: unknown, dim: number): Float32Array {
  if (!(emb instanceof Float32Array) || emb.length !== dim) {
    throw new InputError("query.embedding", "", `the engine returned ${emb instanceof Float32Array ? emb.length : "no"} floats, not ${dim}`);
  }
  if (!emb.every(Number.isFinite)) throw new InputError("query.embedding", "", "the engine returned a value that is not finite");
  return emb;
}

export class Classifier {
  readonly labels: readonly string[];
  /** Cosine between this engine's and the exporter's embedding of the check text. */
  checkCosine = 0;

  protected constructor(readonly bundle: Bundle, readonly tokenizer: TextTokenizer, private readonly engine: Engine,
                        readonly scorer: Scorer, private readonly seconds: { load: number; query: number },
                        private readonly fileBytes: number) {
    this.labels = bundle.labels;
  }

  /** Read, validate and prepare a bundle (BundleError if it cannot be used). The bytes are copied. */
  static async load(bytes: Uint8Array | ArrayBuffer, options: LoadOptions = {}): Promise<Classifier> {
    const given = options.encoderPack;
    const pack = given instanceof Uint8Array || given instanceof ArrayBuffer ? await readPack(given) : given;
    return this.fromBundle(await readBundle(bytes, { pack }), options, bytes.byteLength);
  }

  /** The engine when none is given: each entry point's subclass names its own. */
  protected static defaultEngine(_options: LoadOptions = {}): EngineFactory | undefined {
    return undefined;
  }

  /** Prepare an already read bundle. */
  static async fromBundle(bundle: Bundle, options: LoadOptions = {}, fileBytes = 0): Promise<Classifier> {
    const e = bundle.encoder;
    const factory = options.engine ?? this.defaultEngine(options);
    if (factory === undefined) {
      throw new BundleError("engine.unavailable", "encoder.format", 'no engine given: import Classifier from "dpedge" (Node) or "dpedge/browser", or pass { engine }');
    }
    const engine = await factory();
    if (!engine.formats.includes(e.format)) {
      await engine.release();
      throw new BundleError("engine.unavailable", "encoder.format", `${engine.name} does not run ${e.format} encoders` +
        (e.format === "tflite" ? " (no JavaScript engine does: build the bundle with the ONNX encoder, the exporter's default)" : ""));
    }
    const scale = timeScale(options.timeScale);
    const seconds = { load: SCHEMA.encoder.load_run_seconds * scale, query: SCHEMA.encoder.query_run_seconds * scale };
    const clf = new Classifier(bundle, new TextTokenizer(e.tokenizer, e.maxLength, e.textPrefix), engine, new Scorer(bundle),
      seconds, fileBytes);
    try {
      try {
        await engine.load(e.model, e.weights, { inputs: e.inputs, output: e.output, dim: e.dim }, seconds.load);
      } catch (err) {
        if (err instanceof WrongIO) throw new BundleError("engine.io", err.path, err.message);
        throw err;
      }
      clf.checkCosine = await clf.verify();
    } catch (err) {
      await engine.release();
      if (err instanceof DpedgeError) throw err;
      throw new BundleError(err instanceof BudgetExceeded ? "engine.budget" : "engine.load", "encoder.model",
        `the encoder cannot be loaded by ${engine.name}: ${oneLine(err)}`);
    }
    return clf;
  }

  /** The engine's name, e.g. "onnxruntime-web 1.30.0 (wasm, 2 threads)". */
  get engineName(): string {
    return this.engine.name;
  }

  /** Embed the check text and compare with the exporter's embedding: returns the cosine. */
  private async verify(): Promise<number> {
    const ref = this.bundle.encoder.checkEmbedding;
    let emb: Float32Array;
    try {
      emb = checked(await this.engine.embed(this.tokenizer.encode(this.bundle.encoder.checkText), this.seconds.load), ref.length);
    } catch (err) {
      if (err instanceof InputError) throw new BundleError("engine.check", "encoder.check_embedding", err.message);
      throw err;
    }
    let [ab, aa, bb] = [0, 0, 0];
    emb.forEach((x, i) => {
      ab += x * ref[i]!;
      aa += x * x;
      bb += ref[i]! * ref[i]!;
    });
    const cos = ab / (Math.sqrt(aa) * Math.sqrt(bb) + 1e-12);
    if (!(cos >= SCHEMA.encoder.check_min_cosine)) {
      throw new BundleError("engine.check", "encoder.check_embedding", `${this.engine.name} embeds the check text at cosine ` +
        `${cos.toFixed(3)} to the exporter's, below ${SCHEMA.encoder.check_min_cosine}: its answers would be wrong`);
    }
    return cos;
  }

  /** Token ids of one text (the bundle's prefix, [CLS] ... [SEP], truncated). */
  tokenize(text: string): number[] {
    return this.tokenizer.encode(checkText(text));
  }

  /** Unit-vector embeddings, one engine run per text; throws InputError (its code) naming a bad text. */
  async embed(texts: readonly string[]): Promise<Float32Array[]> {
    const within = (err: unknown, i: number): unknown => err instanceof InputError && texts.length > 1
      ? new InputError(err.code, err.path, `text ${i}: ${err.message}`) : err;
    texts.forEach((t, i) => {
      try {
        if (!this.tokenizer.hasToken(checkText(t))) {
          throw new InputError("query.empty", "", "nothing to classify: the text is empty, or only white space, controls or invisible characters");
        }
      } catch (err) {
        throw within(err, i);
      }
    });
    const out: Float32Array[] = [];
    for (const [i, t] of texts.entries()) {
      let emb: Float32Array;
      try {
        emb = await this.engine.embed(this.tokenizer.encode(t), this.seconds.query);
      } catch (err) {
        throw within(new InputError("query.engine", "", `the engine failed on this text: ${oneLine(err)}`), i);
      }
      try {
        out.push(checked(emb, this.bundle.encoder.dim));
      } catch (err) {
        throw within(err, i);
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
    return (await this.embed(texts)).map((e) => this.score(e, options.topK ?? 1));
  }

  /** What the bundle is (labels, privacy facts, encoder, sizes; every string escaped), the engine, its budgets and the check's cosine. */
  info(): Record<string, unknown> {
    return {
      ...bundleInfo(this.bundle, this.fileBytes || undefined),
      privacy_summary: privacySummary(this.bundle),
      engine: escape(this.engine.name),
      engine_bounds: this.engine.bounded,
      check_cosine: this.checkCosine,
    };
  }

  /** Free the engine (its session, and its process in Node). */
  async close(): Promise<void> {
    await this.engine.release();
  }
}
