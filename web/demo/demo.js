// The demo page: open a bundle, see its labels and privacy statement, classify typed texts.
// Every text from the bundle is put on the page as text (never as HTML) and escaped by the
// runtime's escape() (unprintable code points shown as \x1b, \u202e). The page fetches only
// its own files: the runtime, onnxruntime-web's WebAssembly, and a bundle named by ?bundle=.
import { Classifier, escape, webEngine } from "./vendor/dpedge.js";

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
const threads = params.has("threads") ? Number(params.get("threads")) : undefined;
let classifier = null;

function show(id, visible) {
  $(id).hidden = !visible;
}

function setStatus(text) {
  $("status").textContent = text;
}

function fail(message) {
  $("error").textContent = `This bundle cannot be used: ${message}`;
  show("error", true);
  setStatus("No bundle open.");
  document.body.dataset.state = "refused";
}

/** An error's message (escaped by the runtime) and its code. */
function said(e) {
  return e instanceof Error ? `${e.message}${e.code ? ` (${e.code})` : ""}` : String(e);
}

function element(tag, className, text) {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (text !== undefined) e.textContent = text;
  return e;
}

function showFacts(info) {
  $("privacy").textContent = `Privacy: ${info.privacy_summary}.`;
  const details = $("privacy-details");
  details.replaceChildren();
  const p = info.privacy;
  const rows = [["epsilon", p.epsilon], ["delta", p.delta], ["protects", p.neighbour_relation], ["privacy unit", p.privacy_unit],
    ["noise", p.noise_source]];
  for (const [name, r] of Object.entries(info.releases)) {
    if (name === "head") { // format 1.1: an (epsilon, delta) release, never pure
      rows.push(["release head", `epsilon ${r.epsilon}, delta ${r.delta} (the epsilon bound may fail with probability up to ` +
        `delta), L2 sensitivity ${r.sensitivity_l2}, noise scale ${r.noise_scale} (noise multiplier ${r.noise_multiplier}), ` +
        `${r.steps} steps at sample rate ${r.sample_rate}; ${r.mechanism}; accountant: ${r.accountant}`]);
      continue;
    }
    rows.push([`release ${name}`, `epsilon ${r.epsilon}, L1 sensitivity ${r.sensitivity_l1}, noise scale ${r.noise_scale}; ${r.mechanism}`]);
  }
  for (const [k, v] of rows) {
    if (v === undefined) continue;
    details.append(element("dt", "", k), element("dd", "", String(v)));
  }
  const labels = $("labels");
  labels.replaceChildren();
  info.labels.forEach((label, i) => {
    const li = element("li", "", label);
    const d = info.label_descriptions?.[i];
    if (d) li.append(" ", element("span", "desc", `(${d})`));
    labels.append(li);
  });
  $("engine").textContent = `Runs on ${escape(info.engine)}; check text cosine ${info.check_cosine.toFixed(4)}; ` +
    `bundle format ${info.format_version}, ${(info.sizes_bytes.file / 2 ** 20).toFixed(1)} MiB.`;
}

async function open(bytes, name) {
  show("error", false);
  show("facts", false);
  show("ask", false);
  $("results").replaceChildren();
  document.body.dataset.state = "loading";
  setStatus(`Opening ${name} (${(bytes.byteLength / 2 ** 20).toFixed(1)} MiB)...`);
  if (classifier) await classifier.close();
  classifier = null;
  const t0 = performance.now();
  try {
    classifier = await Classifier.load(bytes, threads === undefined ? {} : { engine: webEngine({ threads }) });
  } catch (e) {
    fail(said(e));
    return;
  }
  const info = classifier.info();
  showFacts(info);
  show("facts", true);
  show("ask", true);
  setStatus(`Ready: ${name}, ${info.labels.length} labels, loaded in ${((performance.now() - t0) / 1000).toFixed(1)} s.`);
  document.body.dataset.state = "ready";
}

async function classify() {
  const texts = $("texts").value.split("\n").filter((t) => t.trim());
  const out = $("results");
  out.replaceChildren();
  if (!classifier || !texts.length) return;
  document.body.dataset.state = "classifying";
  for (const text of texts) {
    const li = element("li");
    li.append(element("div", "text", text));
    try {
      const [p] = await classifier.classify([text], { topK: 3 });
      li.dataset.label = p.label;
      const best = Math.max(...p.top.map((t) => t.score), 1e-9);
      for (const t of p.top) {
        const row = element("div", "top");
        const bar = element("div", "bar");
        bar.style.width = `${Math.max(2, (100 * t.score) / best)}%`;
        row.append(element("span", "label", t.label), bar, element("span", "score", t.score.toFixed(3)));
        li.append(row);
      }
    } catch (e) {
      li.append(element("div", "error", said(e)));
    }
    out.append(li);
  }
  document.body.dataset.state = "answered";
}

$("file").addEventListener("change", async () => {
  const f = $("file").files?.[0];
  if (f) await open(new Uint8Array(await f.arrayBuffer()), f.name);
});
$("classify").addEventListener("click", classify);

// ?bundle=URL opens a bundle of this site (the tests and the bench use it); other origins are refused.
const wanted = params.get("bundle");
if (wanted) {
  const url = new URL(wanted, location.href);
  if (url.origin !== location.origin) {
    fail("?bundle= must name a file of this site");
  } else {
    const res = await fetch(url);
    if (res.ok) await open(new Uint8Array(await res.arrayBuffer()), url.pathname.split("/").pop());
    else fail(`${url.pathname}: HTTP ${res.status}`);
  }
} else {
  document.body.dataset.state = "empty";
}
