/**
 * The whole app: fetch a bundle, load it with dpedge/browser, classify the text in the box.
 * Its state is in document.body.dataset.state (loading, ready, answered, failed) for the test.
 */
import { Classifier, DeploymentError, DpedgeError, type Prediction } from "dpedge/browser";
import { WorkerClassifier } from "dpedge/worker";

const $ = <T extends HTMLElement>(id: string): T => document.getElementById(id) as T;
const params = new URLSearchParams(location.search);
const bundleUrl = params.get("bundle") ?? "bundle.dpedge";
const wasmPaths = params.get("wasmPaths");

function show(state: string, text: string): void {
  document.body.dataset["state"] = state;
  $("status").textContent = text;
}

/**
 * The one line a bundler may need: Vite and webpack 5 bundle the worker dpedge/worker starts
 * (`new Worker(new URL(...))` in the package), so the page gives no `worker` option; esbuild
 * does not, so build.mjs builds "dpedge/worker-script" as an entry of its own, beside app.js,
 * and defines WORKER_SCRIPT as its name (in an esbuild app of your own, write the URL itself:
 * `{ worker: new URL("./worker-script.js", import.meta.url) }`).
 */
declare const WORKER_SCRIPT: string | undefined;
const workerOption = typeof WORKER_SCRIPT === "string" ? { worker: new URL(WORKER_SCRIPT, import.meta.url) } : {};

/** ?worker: the same page with dpedge/worker. */
async function inWorker(bytes: Uint8Array): Promise<void> {
  const clf = await WorkerClassifier.load(bytes, workerOption);
  show("ready", `${clf.labels.length} labels, in a Web Worker`);
  const classify = async (): Promise<void> => {
    const [r] = await clf.classify([$<HTMLInputElement>("text").value], { topK: 3 });
    if (r?.error) throw r.error;
    $("label").textContent = r!.prediction!.label;
    show("answered", "answered");
  };
  $("classify").addEventListener("click", () => void classify().catch(fail));
  $<HTMLButtonElement>("classify").disabled = false;
}

async function main(): Promise<void> {
  show("loading", `loading ${bundleUrl}...`);
  const bytes = new Uint8Array(await (await fetch(bundleUrl)).arrayBuffer());
  if (params.has("worker")) return inWorker(bytes);
  const clf = await Classifier.load(bytes, wasmPaths === null ? {} : { wasmPaths });
  show("ready", `${clf.labels.length} labels; ${String(clf.info()["privacy_summary"])}`);
  const classify = async (): Promise<void> => {
    const [p]: Prediction[] = await clf.classify([$<HTMLInputElement>("text").value], { topK: 3 });
    $("label").textContent = p!.label;
    $("top").textContent = p!.top.map((s) => `${s.label} ${s.score.toFixed(3)}`).join(", ");
    show("answered", "answered");
  };
  $("classify").addEventListener("click", () => void classify().catch(fail));
  $<HTMLButtonElement>("classify").disabled = false;
}

function fail(e: unknown): void {
  const kind = e instanceof DeploymentError ? "deployment" : e instanceof DpedgeError ? "refused" : "error";
  $("error").dataset["code"] = e instanceof DpedgeError ? e.code : "";
  $("error").textContent = `${kind}: ${e instanceof Error ? e.message : String(e)}`;
  show("failed", "failed");
}

main().catch(fail);
