/**
 * The script that runs inside the Web Worker of a WorkerClassifier (src/worker.ts): it loads the
 * bundle with the in-thread Classifier of "dpedge/browser" (onnxruntime-web, WebAssembly) and
 * classifies texts one at a time, posting each answer as soon as it is there. Between two texts
 * it lets its event loop run, so that a cancel message stops a batch after the text under way.
 *
 * Every refusal is the runtime's own (Classifier.classify: query.empty for a text with nothing
 * readable, query.too_long, query.unicode, query.engine), sent as { code, path, message }.
 * Nothing here touches the network: the only files the worker fetches are onnxruntime-web's
 * loader and WebAssembly (from `wasmPaths`, default: beside this script).
 */
import { Classifier, warmUpEngine, webEngine } from "./browser.js";
import { DpedgeError } from "./errors.js";
import type { ErrorData, LoadRequest, Reply, Request, TextResult, WarmRequest } from "./worker_protocol.js";
import { TextTokenizer } from "./tokenizer.js";

interface Scope {
  onmessage: ((event: { data: Request }) => void) | null;
  postMessage(message: Reply): void;
  close(): void;
}

const scope = globalThis as unknown as Scope;
let classifier: Classifier | null = null;
/** A tokenizer one token longer than the bundle's: a text that fills it was truncated. */
let longer: TextTokenizer | null = null;
let queue: Promise<void> = Promise.resolve();
const cancelled = new Set<number>();

function errorData(e: unknown): ErrorData {
  if (e instanceof DpedgeError) return { name: e.name, code: e.code, path: e.path, message: e.message };
  return { name: "Error", code: "", path: "", message: e instanceof Error ? e.message : String(e) };
}

/** Resolves after the event loop has run the messages already queued (a MessageChannel: no timer clamping). */
function yieldToEvents(): Promise<void> {
  return new Promise((done) => {
    const channel = new MessageChannel();
    channel.port1.onmessage = () => {
      channel.port1.close();
      done();
    };
    channel.port2.postMessage(null);
  });
}

/** The engine's options of a load or a warm-up request. */
const engineOptions = (r: LoadRequest | WarmRequest): Parameters<typeof webEngine>[0] => ({
  ...(r.threads === undefined ? {} : { threads: r.threads }),
  ...(r.wasmPaths === undefined ? {} : { wasmPaths: r.wasmPaths }), ...(r.kernel === undefined ? {} : { kernel: r.kernel }) });

/**
 * While the bundle downloads: onnxruntime-web started and warmed up with the load's settings
 * (warmUpEngine never throws; a failed warm-up leaves the load as it would have been). The load
 * request, queued behind it, finds the WebAssembly's code already run once.
 */
async function warm(r: WarmRequest): Promise<void> {
  const t0 = performance.now();
  const ok = await warmUpEngine(engineOptions(r));
  scope.postMessage({ op: "warmed", ok, ms: performance.now() - t0 });
}

async function load(r: LoadRequest): Promise<void> {
  const t0 = performance.now();
  try {
    if (classifier) await classifier.close();
    classifier = null;
    const engine = webEngine(engineOptions(r));
    const clf = await Classifier.load(r.bytes, { engine, ...(r.encoderPack ? { encoderPack: r.encoderPack } : {}),
      ...(r.timeScale === undefined ? {} : { timeScale: r.timeScale }) });
    const e = clf.bundle.encoder;
    longer = new TextTokenizer(e.tokenizer, e.maxLength + 1, e.textPrefix);
    classifier = clf;
    scope.postMessage({ op: "loaded", info: clf.info(), labels: [...clf.labels], engine: clf.engineName, maxLength: e.maxLength,
      checkCosine: clf.checkCosine, ms: performance.now() - t0 });
  } catch (e) {
    scope.postMessage({ op: "failed", error: errorData(e) });
  }
}

/**
 * Results are posted at most this often (milliseconds): a text that takes longer goes alone, as
 * soon as it is there; faster ones go together, so that a flood of tiny answers does not keep the
 * page's thread busy with one message each.
 */
const POST_MS = 16;

async function classify(job: number, texts: readonly string[], topK: number): Promise<void> {
  const clf = classifier;
  let batch: TextResult[] = [];
  let posted = performance.now();
  const post = (): void => {
    if (batch.length) scope.postMessage({ op: "results", job, results: batch });
    batch = [];
    posted = performance.now();
  };
  for (let index = 0; index < texts.length && clf !== null && !cancelled.has(job); index++) {
    const text = texts[index]!;
    const t0 = performance.now();
    let result: TextResult;
    try {
      const [prediction] = await clf.classify([text], { topK });
      const tokens = longer!.encode(text).length;
      const max = clf.bundle.encoder.maxLength;
      result = { index, prediction: prediction!, error: null, tokens: Math.min(tokens, max), truncated: tokens > max,
        ms: performance.now() - t0 };
    } catch (e) {
      result = { index, prediction: null, error: errorData(e), tokens: 0, truncated: false, ms: performance.now() - t0 };
    }
    batch.push(result);
    if (performance.now() - posted >= POST_MS) post();
    await yieldToEvents();
  }
  post();
  scope.postMessage({ op: "done", job, cancelled: cancelled.delete(job) });
}

scope.onmessage = ({ data }) => {
  switch (data.op) {
    case "warm":
      queue = queue.then(() => warm(data));
      break;
    case "load":
      queue = queue.then(() => load(data));
      break;
    case "classify":
      queue = queue.then(() => classify(data.job, data.texts, data.topK));
      break;
    case "cancel":
      cancelled.add(data.job);
      break;
    case "close":
      queue = queue.then(async () => {
        await classifier?.close();
        classifier = null;
        scope.postMessage({ op: "closed" });
        scope.close();
      });
      break;
  }
};
