/**
 * The whole app: fetch a bundle, load it with dpedge/browser, classify the text in the box.
 * Its state is in document.body.dataset.state (loading, ready, answered, failed) for the test.
 */
import { Classifier, DeploymentError, DpedgeError, type Prediction } from "dpedge/browser";

const $ = <T extends HTMLElement>(id: string): T => document.getElementById(id) as T;
const params = new URLSearchParams(location.search);
const bundleUrl = params.get("bundle") ?? "bundle.dpedge";
const wasmPaths = params.get("wasmPaths");

function show(state: string, text: string): void {
  document.body.dataset["state"] = state;
  $("status").textContent = text;
}

async function main(): Promise<void> {
  show("loading", `loading ${bundleUrl}...`);
  const bytes = new Uint8Array(await (await fetch(bundleUrl)).arrayBuffer());
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
