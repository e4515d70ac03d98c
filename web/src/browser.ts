/**
 * dpedge in a browser: read a bundle, classify texts with onnxruntime-web (WebAssembly). The
 * bundle and the texts stay in the page; the only files fetched are onnxruntime-web's own
 * WebAssembly file (and, in its build that keeps it apart, its loader module).
 *
 *     import { Classifier } from "dpedge/browser";
 *     const bytes = new Uint8Array(await file.arrayBuffer());   // from <input type="file">
 *     const clf = await Classifier.load(bytes);                  // or { wasmPaths: "/ort/" }
 *     const [p] = await clf.classify([text], { topK: 3 });
 *
 * onnxruntime-web is imported when the first classifier is loaded, not with this module, so the
 * module (readBundle, the tokenizer, the scorer) works without it; loading a classifier without
 * it installed is a DeploymentError (engine.deployment) naming the package.
 *
 * Where the WebAssembly file is found: unless `wasmPaths` says otherwise, where onnxruntime-web
 * looks by itself, relative to its own module (`new URL("ort-wasm-simd-threaded.wasm",
 * import.meta.url)`): a bundler that handles that pattern (Vite, webpack) emits the file, an
 * unbundled page finds it in node_modules/onnxruntime-web/dist, and after a bundler that does not
 * (esbuild) it must sit beside the bundled script. A file that cannot be
 * fetched or is not WebAssembly is a DeploymentError naming its URL and the fix, not a refusal
 * of the bundle.
 *
 * Threads: onnxruntime-web runs its kernels on several threads only in a cross-origin isolated
 * page (served with Cross-Origin-Opener-Policy: same-origin and Cross-Origin-Embedder-Policy:
 * require-corp), and its worker threads start from the script that holds its WebAssembly
 * loader: with the loader inside an app's bundle (a bundler's default build of onnxruntime-web)
 * that is the app's own script, which then runs as a worker and fails. So the package's build
 * (dist/browser.js, which an app bundles) uses one thread unless `threads` asks for more or
 * `wasmPaths` names the loader's folder; the demo page's build, which serves the loader as its
 * own file (condition "onnxruntime-web-use-extern-wasm"), uses all cores in an isolated page.
 * The thread count and the WebAssembly files' location are fixed when the first model loads, and
 * a failed start of onnxruntime-web lasts until the page is loaded again. Nothing bounds the engine's time or memory in a page (docs/web.md, "Engine
 * budgets").
 */
import { Classifier as Base, type LoadOptions } from "./classifier.js";
import { oneLine, type EngineFactory, type EngineIO } from "./engine.js";
import { LOWERED_LOCATION, lowerMatMulNBits } from "./engines/lower_nbits.js";
import { OnnxRuntimeEngine, WEIGHTS_LOCATION, type OrtModule } from "./engines/onnxruntime.js";
import { warmUp } from "./engines/warm_up.js";
import { DeploymentError, WORKER_BUNDLING_FIX } from "./errors.js";

/**
 * Where onnxruntime-web's files are served: a folder URL holding both ort-wasm-simd-threaded.mjs
 * and ort-wasm-simd-threaded.wasm (a prefix: onnxruntime-web then loads its loader module from
 * there too), or the URL of each file (`{ wasm }` alone keeps the loader inside the bundle).
 * Relative URLs are taken relative to the page.
 */
export type WasmPaths = string | { readonly wasm?: string | { readonly href: string }; readonly mjs?: string | { readonly href: string } };

export interface WebEngineOptions {
  /**
   * WebAssembly threads; 0 is all cores. More than one take effect only in a cross-origin
   * isolated page, and work only with onnxruntime-web's loader served as its own file (see
   * above). Default: all cores in an isolated page when the loader is known to be its own file
   * (`wasmPaths` names its folder or the .mjs, or this module was built with the loader apart,
   * as the demo page's), else 1.
   */
  readonly threads?: number;
  /** Where onnxruntime-web's WebAssembly file is served (default: where onnxruntime-web looks, relative to its own module). */
  readonly wasmPaths?: WasmPaths;
  /**
   * What onnxruntime-web runs for the encoder's 8-bit MatMulNBits (docs/web.md, "Speed and size").
   * onnxruntime-web's WebAssembly build has no int8 kernel for MatMulNBits: its own ("matmulnbits")
   * unpacks all the weights to float on every run. The engine therefore rewrites the model once,
   * at load (engines/lower_nbits.ts):
   *
   * - "int8" (default): integer maths on the bundle's own 8-bit weights, the activations quantized
   *   per row in blocks of the weights' block size, as onnxruntime's native kernel does
   *   (MatMulIntegerToFloat); about 11 MB more memory for MiniLM;
   * - "float32": a MatMul on the weights dequantized to float32 (the same values onnxruntime-web's
   *   own kernel unpacks each run, so the same embeddings); about 42 MB more for MiniLM;
   * - "matmulnbits": the model as it is.
   *
   * A MatMulNBits a form cannot take keeps a simpler one (int8, then float32, then as it is); past
   * MAX_LOWERED_BYTES of new weights the model goes as it is.
   */
  readonly kernel?: WebKernel;
  /** `false` is `kernel: "matmulnbits"` (the option before `kernel`); `kernel` wins when both are given. */
  readonly dequantizeAtLoad?: boolean;
}

/** What the browser engine runs for MatMulNBits (WebEngineOptions.kernel). */
export type WebKernel = "int8" | "float32" | "matmulnbits";

/** Classifier.load's options in a browser: the engine's `wasmPaths`, for the default engine (not with `engine`). */
export interface BrowserLoadOptions extends LoadOptions {
  readonly wasmPaths?: WasmPaths;
}

/** The files of onnxruntime-web's WebAssembly build this entry uses. */
export const WASM_FILES = ["ort-wasm-simd-threaded.wasm", "ort-wasm-simd-threaded.mjs"] as const;

/**
 * Set (to true) by the package's build, dist/browser.js: the app's bundler decides where
 * onnxruntime-web's loader goes, by default into the app's own script.
 */
declare const DPEDGE_ORT_LOADER_MAY_BE_BUNDLED: boolean | undefined;

/** Whether onnxruntime-web's worker threads would start from a file of its own (its loader), not from the app's script. */
function loaderApart(paths: WasmPaths | undefined): boolean {
  if (typeof paths === "string" || paths?.mjs !== undefined) return true;
  return typeof DPEDGE_ORT_LOADER_MAY_BE_BUNDLED === "undefined" || !DPEDGE_ORT_LOADER_MAY_BE_BUNDLED;
}

interface OrtWeb extends OrtModule {
  readonly env: {
    wasm: { numThreads?: number; wasmPaths?: unknown };
    logLevel?: string;
    readonly versions: { readonly web?: string };
  };
}

let ortWeb: Promise<OrtWeb> | null = null;
let configured: string | null = null;
/** The wasmPaths in effect (the first engine's). */
let configuredPaths: WasmPaths | undefined;
/** The first failure to start onnxruntime-web: it does not try again in this page. */
let deploymentFailure: string | null = null;

/**
 * Why onnxruntime-web could not be imported, and the fix, by where this module runs. In a bundled
 * app a missing package fails the build, so a failure here is rarely a missing package: in a Web
 * Worker it is a worker script that the app's bundler copied as a file instead of bundling it
 * (its imports are bare package names no browser resolves); on a page, a browser that cannot
 * resolve a bare name says so ("Failed to resolve module specifier" in Chromium, "bare
 * specifier" in Firefox, "does not resolve to a valid URL" in Safari).
 */
function importFailure(reason: string, scope: { inWorker: boolean; href: string }): string {
  const head = `onnxruntime-web, dpedge/browser's engine, cannot be imported (${reason})`;
  if (scope.inWorker) {
    return `${head} in the Web Worker ${scope.href}: a deployment problem of the worker, not a missing package. ` +
      `The worker's script was not bundled with its imports. ${WORKER_BUNDLING_FIX}`;
  }
  if (/module specifier|bare specifier|does not resolve to a valid URL/i.test(reason)) {
    return `${head}: the page runs dpedge's module unbundled, where a browser cannot resolve the package name ` +
      "\"onnxruntime-web/wasm\": bundle the app (Vite, webpack, esbuild) or map the name with an import map";
  }
  return `${head}: install it beside dpedge (npm install onnxruntime-web@1.30.0; it is an optional peer dependency)`;
}

function importOrt(): Promise<OrtWeb> {
  ortWeb ??= import("onnxruntime-web/wasm").then((m) => m as unknown as OrtWeb, (e: unknown) => {
    ortWeb = null;
    const g = globalThis as { WorkerGlobalScope?: abstract new () => unknown; location?: { href?: string } };
    const inWorker = typeof g.WorkerGlobalScope === "function" && globalThis instanceof g.WorkerGlobalScope;
    throw new DeploymentError(importFailure(oneLine(e), { inWorker, href: g.location?.href ?? "" }));
  });
  return ortWeb;
}

/** A URL given relative to the page, made absolute (onnxruntime-web resolves relative ones against its own module). */
function absolute(url: string | { readonly href: string }): string {
  const text = typeof url === "string" ? url : url.href;
  const base = (globalThis as { location?: { href?: string } }).location?.href;
  try {
    return new URL(text, base).href;
  } catch {
    return text;
  }
}

function resolvePaths(paths: WasmPaths): string | { wasm?: string; mjs?: string } {
  if (typeof paths === "string") {
    const prefix = absolute(paths);
    return prefix.endsWith("/") ? prefix : `${prefix}/`;
  }
  return { ...(paths.wasm === undefined ? {} : { wasm: absolute(paths.wasm) }), ...(paths.mjs === undefined ? {} : { mjs: absolute(paths.mjs) }) };
}

/** The page's requests for onnxruntime-web's files, from its resource timing: URL and HTTP status (0: unknown). */
function ortRequests(): { url: string; status: number }[] {
  const entries = (globalThis as { performance?: { getEntriesByType?(t: string): unknown[] } }).performance?.getEntriesByType?.("resource") ?? [];
  return (entries as { name: string; responseStatus?: number }[])
    .filter((e) => /ort-wasm[\w.-]*\.(m?js|wasm)(\?|#|$)/.test(e.name))
    .map((e) => ({ url: e.name, status: e.responseStatus ?? 0 }));
}

const unique = (xs: string[]): string[] => xs.filter((x, i) => xs.indexOf(x) === i);

/** The DeploymentError for onnxruntime-web's failure to start (its backend did not initialize), else null. */
async function deploymentError(err: unknown, paths: WasmPaths | undefined): Promise<DeploymentError | null> {
  const text = oneLine(err, 600);
  if (!/no available backend found/i.test(text) && deploymentFailure === null) return null;
  if (deploymentFailure === null) {
    // A request's timing entry is recorded when its response ends, which may be after the failure it caused.
    await new Promise((done) => setTimeout(done, 100));
    const requests = ortRequests();
    const failed = unique(requests.filter((r) => r.status >= 400).map((r) => `${r.url} (HTTP ${r.status})`));
    const named = unique(text.match(/\b(?:https?|file|blob):[^\s'"(),]+/g) ?? []);
    const wasm = unique(requests.filter((r) => r.url.includes(".wasm")).map((r) => r.url));
    const what = failed.length ? `${failed.join(", ")} could not be loaded`
      : /magic word|CompileError/i.test(text) ? `${wasm.length ? wasm.join(", ") : "its WebAssembly file"} is not WebAssembly (the server answered with another file, such as an HTML page)`
        : named.length ? `${named.join(", ")} could not be loaded` : "its WebAssembly runtime did not start";
    const where = paths === undefined
      ? `serve ${WASM_FILES[0]} from node_modules/onnxruntime-web/dist/ beside the script that bundles dpedge/browser (a bundler that does not copy it, such as esbuild, needs this step), or say where it is served with Classifier.load(bytes, { wasmPaths }) or webEngine({ wasmPaths })`
      : `serve ${typeof paths === "string" ? `${WASM_FILES.join(" and ")} (from node_modules/onnxruntime-web/dist/) under the wasmPaths folder` : "the files wasmPaths names"}, with the version of onnxruntime-web installed`;
    deploymentFailure = `onnxruntime-web cannot start, so no bundle can be loaded in this page: ${what} (${text}). Fix the deployment: ${where}; then load the page again`;
  }
  return new DeploymentError(deploymentFailure);
}

/**
 * onnxruntime-web's engine: a failure to start onnxruntime-web is a DeploymentError, anything else
 * the Classifier's refusal. Its WebAssembly kernels would unpack MatMulNBits' 8-bit weights on
 * every run: the model it is given has them dequantized once, here (engines/lower_nbits.ts).
 */
class WebEngine extends OnnxRuntimeEngine {
  constructor(ort: OrtModule, name: string, private readonly paths: WasmPaths | undefined,
              private readonly kernel: WebKernel) {
    super(ort, name, { executionProviders: ["wasm"] });
  }

  protected override prepare(model: Uint8Array, weights: Uint8Array): { model: Uint8Array; more: { path: string; data: Uint8Array }[] } {
    const lowered = this.kernel === "matmulnbits" ? null
      : lowerMatMulNBits(model, new Map([[WEIGHTS_LOCATION, weights]]), { kernel: this.kernel });
    if (lowered === null) return { model, more: [] };
    return { model: lowered.model, more: [{ path: LOWERED_LOCATION, data: lowered.data }] };
  }

  override async load(model: Uint8Array, weights: Uint8Array, io: EngineIO): Promise<void> {
    try {
      await super.load(model, weights, io);
    } catch (e) {
      throw (await deploymentError(e, this.paths)) ?? e;
    }
  }
}

/** The kernel when none is asked for (docs/web.md says why). */
export const DEFAULT_KERNEL: WebKernel = "int8";

/** onnxruntime-web's settings, made once in a page or worker (its threads and files are fixed at its start). */
function configure(ort: OrtWeb, options: WebEngineOptions): void {
  if (configured !== null) return;
  const isolated = (globalThis as { crossOriginIsolated?: boolean }).crossOriginIsolated === true;
  const cores = (globalThis.navigator?.hardwareConcurrency as number | undefined) ?? 1;
  const threads = options.threads ?? (loaderApart(options.wasmPaths) ? 0 : 1);
  ort.env.wasm.numThreads = isolated ? (threads === 0 ? cores : threads) : 1;
  if (options.wasmPaths !== undefined) ort.env.wasm.wasmPaths = resolvePaths(options.wasmPaths);
  configuredPaths = options.wasmPaths;
  ort.env.logLevel = "error";
  configured = `${ort.env.wasm.numThreads} thread${ort.env.wasm.numThreads === 1 ? "" : "s"}`;
}

function kernelOf(options: WebEngineOptions): WebKernel {
  const kernel = options.kernel ?? (options.dequantizeAtLoad === false ? "matmulnbits" : DEFAULT_KERNEL);
  if (!["int8", "float32", "matmulnbits"].includes(kernel)) throw new TypeError(`webEngine: kernel is "int8", "float32" or "matmulnbits", not ${String(kernel)}`);
  return kernel;
}

/** onnxruntime-web on WebAssembly (imported at the first load). */
export function webEngine(options: WebEngineOptions = {}): EngineFactory {
  return async () => {
    const ort = await importOrt();
    if (deploymentFailure !== null) throw new DeploymentError(deploymentFailure);
    configure(ort, options);
    const kernel = kernelOf(options);
    return new WebEngine(ort, `onnxruntime-web ${ort.env.versions.web} (wasm, ${configured})`, configuredPaths, kernel);
  };
}

/**
 * Start onnxruntime-web with a later webEngine(options)'s settings and warm it up (a session of a
 * small model of its own, run once and released: engines/warm_up.ts), before any bundle is there:
 * WorkerClassifier's worker runs it while the bundle downloads. Never throws, and a failure leaves
 * nothing behind that changes a load: the load that follows meets onnxruntime-web as it would
 * have (a failed import is tried again; a failure to start is the load's own DeploymentError).
 * Resolves to whether the warm-up ran.
 */
export async function warmUpEngine(options: WebEngineOptions = {}): Promise<boolean> {
  try {
    const ort = await importOrt();
    if (deploymentFailure !== null) return false;
    configure(ort, options);
    await warmUp(ort, kernelOf(options), { executionProviders: ["wasm"] });
    return true;
  } catch {
    return false;
  }
}

/** The Classifier with onnxruntime-web as its default engine. */
export class Classifier extends Base {
  /** Read, validate and prepare a bundle; `wasmPaths` says where onnxruntime-web's files are served (Base.load has the rest). */
  static override load(bytes: Uint8Array | ArrayBuffer, options: BrowserLoadOptions = {}): Promise<Base> {
    return super.load(bytes, options);
  }

  protected static override defaultEngine(options: LoadOptions = {}): EngineFactory {
    const { wasmPaths } = options as BrowserLoadOptions;
    return webEngine(wasmPaths === undefined ? {} : { wasmPaths });
  }
}

export * from "./common.js";
