/**
 * dpedge off the page's main thread: the bundle is read, checked and run in a Web Worker
 * (src/worker_script.ts, onnxruntime-web inside it), so that a page stays responsive while a
 * 23 MB bundle loads and while a batch of texts is classified. Answers stream text by text.
 *
 *     import { WorkerClassifier } from "dpedge/worker";   // the demo page: ./vendor/worker.js
 *     const clf = await WorkerClassifier.load(bytes, { threads: 1 });
 *     // or, while the bundle downloads, the worker starts and warms its engine up:
 *     // WorkerClassifier.load(fetch(url).then((r) => r.arrayBuffer()), { threads: 1 })
 *     const results = await clf.classify(texts, {
 *       topK: 3,
 *       onResult: (r) => show(r),                         // r.prediction, or r.error (query.empty...)
 *       onProgress: (done, total) => bar.value = done / total,
 *       signal: controller.signal,                        // abort: stops after the text under way
 *     });
 *     clf.terminate();
 *
 * A result is the in-thread Classifier's answer for that text (`prediction`: label, every
 * label's score, the topK best), or its refusal (`error`: code, path, message), with the tokens
 * the encoder read and whether the text was truncated at encoder.max_length. Texts are
 * classified one at a time, as Classifier.classify does; the worker's engine is its own (its
 * threads are set per worker, unlike onnxruntime-web's once-per-page setting).
 *
 * The worker script is `worker-script.js`, beside this module (the default), or the `worker`
 * option: a URL, or a Worker already started from it (for bundlers that rewrite
 * `new Worker(new URL(..., import.meta.url))`). Terminating the worker frees everything it
 * held at once, also in the middle of an engine run.
 */
import type { Prediction } from "./classifier.js";
import { BundleError, DeploymentError, DpedgeError, InputError, WORKER_BUNDLING_FIX } from "./errors.js";
import type { ErrorData, Loaded, Reply, Request, TextResult } from "./worker_protocol.js";

export type { ErrorData, TextResult } from "./worker_protocol.js";

export interface WorkerLoadOptions {
  /** The worker: a Worker started from worker-script.js, or that script's URL (default: beside this module). */
  readonly worker?: Worker | URL | string;
  /** WebAssembly threads in the worker (default: all cores when the page is cross-origin isolated, else 1). */
  readonly threads?: number;
  /** Where onnxruntime-web's ort-wasm-simd-threaded.{mjs,wasm} are served (default: beside the worker script). */
  readonly wasmPaths?: string;
  /** Stretches the engine's time budgets (see LoadOptions.timeScale). */
  readonly timeScale?: number;
  /** What the engine runs for the encoder's MatMulNBits (see WebEngineOptions.kernel in dpedge/browser; default "int8"). */
  readonly kernel?: "int8" | "float32" | "matmulnbits";
  /** The encoder pack file's bytes, for a statistics bundle (format 1.1). */
  readonly encoderPack?: Uint8Array | ArrayBuffer;
  /** Aborting it stops loading: the worker is terminated and load rejects with an AbortError. */
  readonly signal?: AbortSignal;
}

export interface WorkerClassifyOptions {
  /** How many best labels each prediction lists in `top` (default 1). */
  readonly topK?: number;
  /** Called with each text's result as soon as it is there, in the texts' order. */
  readonly onResult?: (result: TextResult) => void;
  /** Called after each text: how many are done, of how many. */
  readonly onProgress?: (done: number, total: number) => void;
  /** Aborting it stops the batch after the text under way: classify rejects with an AbortError. */
  readonly signal?: AbortSignal;
}

/** The error a refusal was in the worker: BundleError or InputError with its code and path. */
export function fromData(e: ErrorData): Error {
  if (e.name === "BundleError") return new BundleError(e.code, e.path, e.message);
  if (e.name === "InputError") return new InputError(e.code, e.path, e.message);
  if (e.name === "DeploymentError") return new DeploymentError(e.message);
  if (e.code) return new DpedgeError(e.code, e.path, e.message);
  return new Error(e.message);
}

/**
 * The worker did not start: its script could not be fetched, was not a module script, or threw
 * at its start. A browser's error event does not say which, so the message names the script and
 * the usual cause: a bundler that does not follow `new Worker(new URL(...))` in a dependency
 * (esbuild) leaves no worker-script.js beside the app's script.
 */
function workerStartFailure(detail: string, script: string): string {
  return `the classifier's Web Worker did not start (${detail || "no detail from the browser"}): ${script} could not be ` +
    `loaded as a module or failed at its start. ${WORKER_BUNDLING_FIX}`;
}

function abortError(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException("the operation was aborted", "AbortError");
}

/** A warm-up of the worker's engine while the bundle downloaded (WorkerClassifier.load given a promise). */
export interface WarmUp {
  /** Whether it ran; false: it failed, and the load went on as without it. */
  readonly ok: boolean;
  /** Its milliseconds in the worker (starting onnxruntime-web included). */
  readonly ms: number;
}

const isPromiseLike = (x: unknown): x is PromiseLike<unknown> =>
  typeof x === "object" && x !== null && typeof (x as { then?: unknown }).then === "function";

interface Job {
  readonly texts: readonly string[];
  readonly results: TextResult[];
  readonly options: WorkerClassifyOptions;
  resolve(results: TextResult[]): void;
  reject(error: unknown): void;
}

export class WorkerClassifier {
  /** The bundle's labels, escaped. */
  readonly labels: readonly string[];
  /** The engine's name, e.g. "onnxruntime-web 1.30.0 (wasm, 1 thread)". */
  readonly engineName: string;
  /** encoder.max_length: the tokens the encoder reads of a text (its prefix, [CLS] and [SEP] included); the rest is not read. */
  readonly maxLength: number;
  /** Cosine between this engine's and the exporter's embedding of the check text. */
  readonly checkCosine: number;
  /** Milliseconds the worker took to load (reading, checking, the engine's session, the check text). */
  readonly loadMs: number;
  /** The warm-up while the bundle's promise was pending: whether it ran and its milliseconds (null: load was given the bytes). */
  readonly warmUp: WarmUp | null;
  private readonly facts: Record<string, unknown>;
  private readonly jobs = new Map<number, Job>();
  private next = 1;
  private dead: Error | null = null;

  private constructor(private readonly worker: Worker, loaded: Loaded, warmUp: WarmUp | null) {
    this.warmUp = warmUp;
    this.labels = loaded.labels;
    this.engineName = loaded.engine;
    this.maxLength = loaded.maxLength;
    this.checkCosine = loaded.checkCosine;
    this.loadMs = loaded.ms;
    this.facts = loaded.info;
    worker.onmessage = (event: MessageEvent<Reply>) => this.receive(event.data);
    worker.onerror = (event: ErrorEvent) => this.die(new Error(`the classifier's worker failed: ${event.message || "an error"}`));
  }

  /**
   * Start a worker, read and check the bundle in it and load its encoder (BundleError if it
   * cannot be used, with the in-thread Classifier's code and path). The bytes are copied.
   *
   * `bytes` may be a promise of them, such as `fetch(url).then((r) => r.arrayBuffer())`: while it
   * is pending the worker starts and warms onnxruntime-web up (a small model of its own, run once:
   * most of a cold engine's cost is its WebAssembly's first run), so that the download and the
   * engine's start overlap. The warm-up knows nothing of the bundle and changes no answer and no
   * refusal, only when they come; if it fails, the load goes on as without it. A promise that
   * rejects rejects load with its error (the worker is terminated).
   */
  static async load(bytes: Uint8Array | ArrayBuffer | PromiseLike<Uint8Array | ArrayBuffer>,
                    options: WorkerLoadOptions = {}): Promise<WorkerClassifier> {
    const { signal } = options;
    if (signal?.aborted) throw abortError(signal);
    const given = options.worker;
    // Named in words: a second `new URL("./worker-script.js", import.meta.url)` here would make
    // Vite and webpack copy the unbundled script as an asset as well.
    const script = given instanceof Worker ? "the Worker it was given"
      : given === undefined ? "its default script (worker-script.js beside dpedge/worker's module)" : `its script ${String(given)}`;
    // The default is written as the literal `new Worker(new URL("./worker-script.js", import.meta.url), ...)`:
    // Vite and webpack 5 recognise exactly that pattern in a dependency and bundle the worker
    // script with its imports (onnxruntime-web). Any other spelling (`given ?? new URL(...)`)
    // makes them copy the script as a file whose imports no browser can resolve.
    const worker = given instanceof Worker ? given
      : given !== undefined ? new Worker(given, { type: "module", name: "dpedge" })
      : new Worker(new URL("./worker-script.js", import.meta.url), { type: "module", name: "dpedge" });
    const copy = (b: Uint8Array | ArrayBuffer): Uint8Array => (b instanceof Uint8Array ? b.slice() : new Uint8Array(b.slice(0)));
    // The engine's settings: the same in the warm-up and the load (onnxruntime-web fixes them at its start).
    const engine = {
      ...(options.threads === undefined ? {} : { threads: options.threads }),
      ...(options.wasmPaths === undefined ? {} : { wasmPaths: options.wasmPaths }),
      ...(options.kernel === undefined ? {} : { kernel: options.kernel }),
    };
    let warmUp: WarmUp | null = null;
    const loaded = await new Promise<Loaded>((resolve, reject) => {
      let over = false;
      const stop = (error: unknown): void => {
        if (over) return;
        over = true;
        signal?.removeEventListener("abort", onAbort);
        worker.terminate();
        reject(error);
      };
      const onAbort = (): void => stop(abortError(signal!));
      signal?.addEventListener("abort", onAbort, { once: true });
      worker.onmessage = (event: MessageEvent<Reply>) => {
        const m = event.data;
        if (m.op === "warmed") {
          warmUp = { ok: m.ok, ms: m.ms };
          return;
        }
        if (m.op !== "loaded") stop(m.op === "failed" ? fromData(m.error) : new Error(`the classifier's worker answered ${m.op} to load`));
        else if (!over) {
          over = true;
          signal?.removeEventListener("abort", onAbort);
          resolve(m);
        }
      };
      worker.onerror = (event: ErrorEvent) => {
        event.preventDefault();
        stop(new DeploymentError(workerStartFailure(event.message, script)));
      };
      const send = (b: Uint8Array | ArrayBuffer): void => {
        if (over) return;
        try {
          const request: Request = {
            op: "load", bytes: copy(b), ...(options.encoderPack ? { encoderPack: copy(options.encoderPack) } : {}),
            ...engine, ...(options.timeScale === undefined ? {} : { timeScale: options.timeScale }),
          };
          worker.postMessage(request, [request.bytes.buffer, ...(request.encoderPack ? [request.encoderPack.buffer] : [])]);
        } catch (e) {
          stop(e);
        }
      };
      if (!isPromiseLike(bytes)) {
        send(bytes);
        return;
      }
      worker.postMessage({ op: "warm", ...engine } satisfies Request);
      Promise.resolve(bytes).then((b) => {
        if (b instanceof Uint8Array || b instanceof ArrayBuffer) send(b);
        else stop(new TypeError("WorkerClassifier.load: the promise gave neither a Uint8Array nor an ArrayBuffer " +
          "(for a fetch: fetch(url).then((r) => r.arrayBuffer()))"));
      }, stop);
    });
    return new WorkerClassifier(worker, loaded, warmUp);
  }

  /** What the bundle is, as the in-thread Classifier's info() (labels, privacy facts, releases, encoder, sizes, engine). */
  info(): Record<string, unknown> {
    return structuredClone(this.facts);
  }

  /**
   * Classify texts one at a time in the worker. Resolves to every text's result in order
   * (a refused text has `error`, the others `prediction`); each result is also given to
   * `onResult` as soon as it is there. Rejects with an AbortError when `signal` aborts (the
   * results so far have gone to onResult), or with an Error if the worker died.
   */
  classify(texts: readonly string[], options: WorkerClassifyOptions = {}): Promise<TextResult[]> {
    const { signal } = options;
    if (this.dead) return Promise.reject(this.dead);
    if (signal?.aborted) return Promise.reject(abortError(signal));
    const job = this.next++;
    return new Promise<TextResult[]>((resolve, reject) => {
      if (texts.length === 0) {
        resolve([]);
        return;
      }
      const onAbort = (): void => {
        if (!this.jobs.delete(job)) return;
        this.post({ op: "cancel", job });
        reject(abortError(signal!));
      };
      const settle = <T>(f: (x: T) => void) => (x: T): void => {
        signal?.removeEventListener("abort", onAbort);
        f(x);
      };
      this.jobs.set(job, { texts, results: [], options, resolve: settle(resolve), reject: settle(reject) });
      signal?.addEventListener("abort", onAbort, { once: true });
      this.post({ op: "classify", job, texts: [...texts], topK: Math.max(1, options.topK ?? 1) });
    });
  }

  /** The predictions of texts as the in-thread Classifier.classify gives them: rejects with the first refusal (InputError, "text i: ..."). */
  async predict(texts: readonly string[], options: { topK?: number; signal?: AbortSignal } = {}): Promise<Prediction[]> {
    const results = await this.classify(texts, options);
    const bad = results.find((r) => r.error !== null);
    if (bad) {
      const e = bad.error!;
      throw fromData(texts.length > 1 ? { ...e, message: `text ${bad.index}: ${e.message}` } : e);
    }
    return results.map((r) => r.prediction!);
  }

  /** Stop the worker: pending batches reject, the engine's memory is freed at once. */
  terminate(): void {
    this.worker.terminate();
    this.die(new Error("the classifier was terminated"));
  }

  /** As terminate(): the in-thread Classifier's name for it. */
  async close(): Promise<void> {
    this.terminate();
  }

  private post(request: Request): void {
    this.worker.postMessage(request);
  }

  private receive(m: Reply): void {
    if (m.op !== "results" && m.op !== "done") return;
    const job = this.jobs.get(m.job);
    if (job === undefined) return; // cancelled here already
    if (m.op === "results") {
      for (const r of m.results) {
        if (!this.jobs.has(m.job)) return; // cancelled by a callback
        job.results.push(r);
        job.options.onResult?.(r);
        job.options.onProgress?.(job.results.length, job.texts.length);
      }
      return;
    }
    this.jobs.delete(m.job);
    job.resolve(job.results);
  }

  private die(error: Error): void {
    this.dead ??= error;
    for (const job of this.jobs.values()) job.reject(error);
    this.jobs.clear();
  }
}

/** For pages that display texts: unprintable code points as \x1b, \u202e (escape), and whether a text prints as anything (showsSomething). */
export { escape, showsSomething } from "./text.js";
/** What delta is, in the contract's words (schema.json "wording" "delta"), for pages that explain a guarantee. */
export { DELTA_STATEMENT, DELTA_SUMMARY } from "./contract.js";
