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

/** ?worker: the same page with dpedge/worker, the worker script built by build.mjs beside app.js. */
async function inWorker(bytes: Uint8Array): Promise<void> {
  const clf = await WorkerClassifier.load(bytes, { worker: new URL("./worker-script.js", import.meta.url) });
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
