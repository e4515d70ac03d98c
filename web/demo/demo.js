// The demo page: open a bundle, read what it protects in plain words, classify one text or a
// batch. The bundle is read and run in a Web Worker (WorkerClassifier, src/worker.ts), so the
// page stays usable while a bundle loads and while a batch runs; answers stream in text by text.
// Every text from the bundle is put on the page as text (never as HTML), escaped by the runtime
// (unprintable code points shown as \x1b, \u202e); so are the texts classified. The page
// fetches only its own files: its scripts, onnxruntime-web's WebAssembly, and a bundle named
// by ?bundle=.
import { DELTA_STATEMENT, DELTA_SUMMARY, WorkerClassifier, escape, showsSomething } from "./vendor/worker.js";

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
// WebAssembly threads: ?threads=N, else 1 on a machine of two cores or fewer (measured there: two threads are
// slower than one, docs/web.md), else onnxruntime-web's default (all cores, on this cross-origin isolated page).
const threads = params.has("threads") ? Number(params.get("threads")) : (navigator.hardwareConcurrency ?? 1) <= 2 ? 1 : undefined;
/** Characters of a text shown in the table; the whole text is in the downloads. */
const SHOWN_CHARS = 160;
/** Milliseconds of table rows put on the page per frame during a batch. */
const FRAME_MS = 8;
let classifier = null;
let loading = null; // AbortController of the load under way
let running = null; // AbortController of the batch under way
let rows = []; // this batch's results, with their texts, for the summary and the downloads
let urls = [];

function show(id, visible) {
  $(id).hidden = !visible;
}

function setStatus(text) {
  $("status").textContent = text;
}

function setState(state) {
  document.body.dataset.state = state;
}

function fail(message, deployment = false) {
  // A deployment error (engine.deployment: the engine's files missing or unloadable) is this
  // site's problem, not the bundle's: say so.
  $("error").textContent = deployment ? `This page is missing part of its engine (not the bundle's fault): ${message}`
    : `This bundle cannot be used: ${message}`;
  show("error", true);
  setStatus("No bundle open.");
  setState("refused");
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

/** A number as an auditor reads it: up to 10 significant digits, no float noise (51.05263158). */
function exact(x) {
  return typeof x === "number" ? String(Number(x.toPrecision(10))) : String(x);
}

/** e^epsilon in words. */
function factor(eps) {
  const f = Math.exp(eps);
  if (f < 10) return f.toFixed(2);
  if (f < 1e6) return Math.round(f).toLocaleString("en");
  return `about 10^${Math.floor(eps / Math.LN10)}`;
}

/** The privacy facts in plain words, first; the auditor's table goes in the <details> beneath. */
function showPlain(info) {
  const p = info.privacy;
  const eps = Number(p.epsilon);
  const delta = Number(p.delta ?? 0);
  const k = Number(p.max_records_per_unit ?? 1);
  const who = k === 1 ? "any one record (one example) of the data this bundle was built from"
    : `any one person's records taken together (up to ${k} records of one person; ${p.neighbour_relation})`;
  const para = (text, className) => element("p", className, text);
  const box = $("plain");
  box.replaceChildren(
    para(`What is protected: ${who}. Privacy unit: ${p.privacy_unit}.`),
    para(`Epsilon = ${exact(eps)}: adding or removing ${k === 1 ? "one record" : "one person's records"} changes the ` +
      `probability of anything this bundle holds, and so of every answer it gives, by a factor of at most ` +
      `e^${exact(eps)} = ${factor(eps)}. The smaller epsilon is, the less anyone can learn about that ` +
      `${k === 1 ? "record" : "person"} from the bundle.`),
    delta > 0
      // What delta is in the contract's words (schema.json "wording" "delta"), never the page's own.
      ? para(`Delta = ${exact(delta)}: this guarantee is approximate, not pure (the bundle's classifier head was ` +
        `trained with DP-SGD). ${DELTA_STATEMENT}.`, "delta")
      : para("Delta = 0: the bound always holds (pure differential privacy)."),
    para("Classifying texts here costs no privacy: the budget was spent once, when the bundle was built, and your texts " +
      "never leave this page."),
    para("The scores rank the labels for a text: the best label has the highest score. They are not probabilities: " +
      "a score of 0.9 does not mean that the label is right 9 times in 10.", "scores-note"),
  );
}

function showFacts(info) {
  showPlain(info);
  $("privacy").textContent = `Privacy: ${info.privacy_summary}.`;
  const details = $("privacy-details");
  details.replaceChildren();
  const p = info.privacy;
  const rows = [["epsilon", exact(p.epsilon)], ["delta", exact(p.delta)], ["K, records per unit", p.max_records_per_unit],
    ["protects", p.neighbour_relation], ["privacy unit", p.privacy_unit], ["noise", p.noise_source], ["composition", p.composition]];
  if (p.batches !== undefined) rows.push(["batches", p.batches]);
  for (const [name, r] of Object.entries(info.releases)) {
    if (name === "head") { // format 1.1: an (epsilon, delta) release, never pure
      rows.push(["release head", `epsilon ${exact(r.epsilon)}, delta ${exact(r.delta)} (${DELTA_SUMMARY}), L2 sensitivity ` +
        `${exact(r.sensitivity_l2)}, noise scale ${exact(r.noise_scale)} (noise multiplier ${exact(r.noise_multiplier)}), ` +
        `${r.steps} steps at sample rate ${exact(r.sample_rate)}; ${r.mechanism}; accountant: ${r.accountant}`]);
      continue;
    }
    rows.push([`release ${name}`, `epsilon ${exact(r.epsilon)}, L1 sensitivity ${exact(r.sensitivity_l1)}, noise scale ` +
      `${exact(r.noise_scale)} (sensitivity / epsilon); ${r.mechanism}`]);
  }
  for (const [k, v] of rows) {
    if (v === undefined || v === null) continue;
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
  $("limit").textContent = `Only the first ${info.encoder.max_length} tokens of a text are read (a token is a word or a piece ` +
    "of one; the count includes 2 markers): the rest of a longer text does not count.";
  $("engine").textContent = `Runs in a Web Worker on ${escape(info.engine)}; check text cosine ${info.check_cosine.toFixed(4)}; ` +
    `bundle format ${info.format_version}, ${(info.sizes_bytes.file / 2 ** 20).toFixed(1)} MiB.`;
}

async function open(bytes, name) {
  loading?.abort();
  running?.abort();
  show("error", false);
  show("facts", false);
  show("ask", false);
  clearResults();
  setState("loading");
  classifier?.terminate();
  classifier = null;
  const controller = new AbortController();
  loading = controller;
  const t0 = performance.now();
  const size = `${(bytes.byteLength / 2 ** 20).toFixed(1)} MiB`;
  const tick = () => setStatus(`Opening ${name} (${size})... ${((performance.now() - t0) / 1000).toFixed(0)} s ` +
    "(in the background: this page stays usable)");
  tick();
  const timer = setInterval(tick, 500);
  let clf;
  try {
    clf = await WorkerClassifier.load(bytes, { signal: controller.signal, ...(threads === undefined ? {} : { threads }) });
  } catch (e) {
    if (controller.signal.aborted) return;
    fail(said(e), e?.code === "engine.deployment");
    return;
  } finally {
    clearInterval(timer);
    if (loading === controller) loading = null;
  }
  if (controller.signal.aborted) {
    clf.terminate();
    return;
  }
  classifier = clf;
  const info = classifier.info();
  showFacts(info);
  show("facts", true);
  show("ask", true);
  setStatus(`Ready: ${name}, ${info.labels.length} labels, loaded in ${((performance.now() - t0) / 1000).toFixed(1)} s.`);
  setState("ready");
}

/** The texts to classify: one per line (blank lines skipped); a box with no text at all is one empty text, which the runtime refuses. */
function textsOfBox() {
  const value = $("texts").value;
  const lines = value.split(/\r?\n/).filter((t) => t.length > 0);
  return lines.length ? lines : [value];
}

/** A file's texts: one per line, or a JSON Lines file's "text" fields; put in the box (a text's own line breaks become spaces). */
async function readBatchFile(file) {
  const raw = await file.text();
  let texts = raw.split(/\r?\n/).filter((t) => t.length > 0);
  if (/\.jsonl$/i.test(file.name)) {
    texts = texts.map((line, i) => {
      try {
        const v = JSON.parse(line);
        return typeof v === "string" ? v : typeof v?.text === "string" ? v.text : line;
      } catch {
        throw new Error(`line ${i + 1} of ${escape(file.name)} is not JSON`);
      }
    });
  }
  return texts.map((t) => t.replace(/\r?\n|\r/g, " "));
}

function clearResults() {
  rows = [];
  $("rows").replaceChildren();
  show("results", false);
  show("filtering", false);
  show("summary", false);
  show("message", false);
  show("progress", false);
  $("progress-text").textContent = "";
  for (const u of urls) URL.revokeObjectURL(u);
  urls = [];
}

/** A text as the table shows it: escaped, and cut at SHOWN_CHARS characters with the length stated. */
function shownText(text) {
  const cps = Array.from(text);
  const cut = cps.length > SHOWN_CHARS;
  const part = cut ? cps.slice(0, SHOWN_CHARS) : cps;
  if (!text) return { shown: "(empty)", cut, length: 0 };
  if (!showsSomething(text)) { // blanks alone print as nothing: name them
    const named = part.map((c) => `\\${c.codePointAt(0) < 0x100 ? "x" : c.codePointAt(0) < 0x10000 ? "u" : "U"}` +
      c.codePointAt(0).toString(16).padStart(c.codePointAt(0) < 0x100 ? 2 : c.codePointAt(0) < 0x10000 ? 4 : 8, "0"));
    return { shown: `(nothing visible: ${named.join("")})`, cut, length: cps.length };
  }
  return { shown: escape(part.join("")), cut, length: cps.length };
}

/** What a refusal means, in words (the code is the runtime's: the same in Python and Node). */
function refusal(error) {
  if (error.code === "query.empty") {
    return "Nothing to classify: this text is empty or has nothing readable (only spaces, control or invisible characters).";
  }
  return `Not classified: ${error.message} (${error.code || "error"})`;
}

/** Whether a row shows under the filter's words (its label, text or reason contains them; case ignored for display only). */
function shown(tr) {
  const q = $("filter").value.trim().toLowerCase();
  return !q || tr.textContent.toLowerCase().includes(q);
}

function applyFilter() {
  for (const tr of $("rows").children) tr.hidden = !shown(tr);
}

/** A result's row in the results list (a grid of div, not a table: appending rows lays out only the new ones). */
function row(r, text) {
  const tr = element("div", r.error ? "row skipped" : "row");
  tr.setAttribute("role", "row");
  const cellOf = (className, content) => {
    const td = element("div", className, content);
    td.setAttribute("role", "cell");
    return td;
  };
  const { shown, cut, length } = shownText(text);
  const cell = cellOf("text");
  cell.append(element("span", "", shown));
  if (cut) cell.append(element("span", "more", ` ... (${length.toLocaleString("en")} characters in all)`));
  if (r.truncated) {
    cell.append(element("div", "truncated", `Truncated: only its first ${classifier.maxLength} tokens were read.`));
    tr.dataset.truncated = "true";
  }
  tr.append(cellOf("n", String(r.index + 1)), cell);
  if (r.error) {
    tr.dataset.code = r.error.code;
    tr.append(cellOf("why", refusal(r.error)));
  } else {
    const p = r.prediction;
    tr.dataset.label = p.label;
    const score = cellOf("score");
    const bar = element("span", "bar");
    bar.style.width = `${Math.max(2, 100 * p.top[0].score)}%`;
    score.append(element("span", "", p.top[0].score.toFixed(3)), bar);
    tr.append(cellOf("label", p.label), score,
      cellOf("next", p.top.slice(1).map((t) => `${t.label} ${t.score.toFixed(3)}`).join(", ")));
  }
  return tr;
}

/** The summary so far (during a batch) or of the whole batch (final: with the downloads). */
function showSummary(total, ms, cancelled, final = true) {
  const done = rows.length;
  const skipped = rows.filter((r) => r.error);
  const truncated = rows.filter((r) => r.truncated).length;
  const counts = new Map(classifier.labels.map((l) => [l, 0]));
  for (const r of rows) if (r.prediction) counts.set(r.prediction.label, counts.get(r.prediction.label) + 1);
  const why = new Map();
  for (const r of skipped) why.set(r.error.code, (why.get(r.error.code) ?? 0) + 1);
  const reasons = [...why].map(([code, n]) => `${n} ${code === "query.empty" ? "with nothing readable" : code}`).join(", ");
  $("summary-text").textContent = `${cancelled ? `Cancelled after ${done} of ${total} texts` : `${done} text${done === 1 ? "" : "s"}`}: ` +
    `${done - skipped.length} classified, ${skipped.length} skipped${reasons ? ` (${reasons})` : ""}` +
    `${truncated ? `, ${truncated} truncated at ${classifier.maxLength} tokens` : ""}; ` +
    `${(ms / 1000).toFixed(1)} s${done ? `, ${(ms / done).toFixed(0)} ms per text` : ""}.`;
  const list = $("summary-labels");
  list.replaceChildren();
  for (const [label, n] of counts) {
    if (n === 0) continue;
    const li = element("li", "", `${label}: ${n}`);
    li.dataset.label = label;
    li.dataset.count = String(n);
    list.append(li);
  }
  if (final) makeDownloads();
  show("downloads", final);
  show("summary", true);
}

/** A CSV field: quoted, and a leading =, +, - or @ defused (a spreadsheet would run it as a formula). */
function csvField(v) {
  let s = String(v ?? "");
  if (/^[=+\-@\t\r]/.test(s)) s = `'${s}`;
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

function makeDownloads() {
  for (const u of urls) URL.revokeObjectURL(u);
  const labels = classifier.labels;
  const header = ["index", "text", "label", "score", "truncated", "tokens", "error_code", "error", ...labels.map((l) => `score_${l}`)];
  const lines = [header.map(csvField).join(",")];
  const json = [];
  for (const r of rows) {
    const scores = r.prediction ? Object.fromEntries(r.prediction.scores.map((s) => [s.label, s.score])) : null;
    lines.push([r.index, r.text, r.prediction?.label ?? "", r.prediction?.top[0].score ?? "", r.truncated, r.tokens,
      r.error?.code ?? "", r.error ? refusal(r.error) : "", ...labels.map((l) => scores?.[l] ?? "")].map(csvField).join(","));
    json.push({ index: r.index, text: r.text, label: r.prediction?.label ?? null, scores, truncated: r.truncated, tokens: r.tokens,
      error: r.error ? { code: r.error.code, message: r.error.message } : null });
  }
  const link = (id, body, type) => {
    const url = URL.createObjectURL(new Blob([body], { type }));
    urls.push(url);
    $(id).href = url;
  };
  link("csv", lines.join("\r\n") + "\r\n", "text/csv;charset=utf-8");
  link("json", JSON.stringify({ labels, max_length: classifier.maxLength, results: json }, null, 1), "application/json");
}

async function classify() {
  if (!classifier || running) return;
  clearResults();
  const texts = textsOfBox();
  const controller = new AbortController();
  running = controller;
  $("classify").disabled = true;
  $("cancel").disabled = false;
  const progress = $("progress");
  progress.max = texts.length;
  progress.value = 0;
  show("progress", true);
  show("results", true);
  show("filtering", texts.length > 1);
  setState("classifying");
  const t0 = performance.now();
  let lastSummary = 0;
  let cancelled = false;
  // Results are put on the page once per frame, for at most FRAME_MS of work, however fast they come: the page's
  // thread stays free for the person (the rest waits for the next frame; the progress counts every result at once).
  let pending = [];
  let frame = 0;
  let drained = null;
  const later = (f) => (document.hidden ? setTimeout(f, 50) : requestAnimationFrame(f)); // no frames in a hidden tab
  const step = () => {
    frame = 0;
    const start = performance.now();
    const rowsNow = document.createDocumentFragment();
    let n = 0;
    while (n < pending.length && (n < 5 || performance.now() - start < FRAME_MS)) {
      const tr = row(pending[n], texts[pending[n++].index]);
      tr.hidden = !shown(tr);
      rowsNow.append(tr);
    }
    pending = pending.slice(n);
    $("rows").append(rowsNow);
    const done = rows.length;
    progress.value = done;
    $("progress-text").textContent = `${done} / ${texts.length}`;
    document.body.dataset.done = String(done);
    if (texts.length > 1 && performance.now() - lastSummary > 1000) {
      lastSummary = performance.now();
      showSummary(texts.length, performance.now() - t0, false, false);
    }
    if (pending.length) frame = later(step);
    else drained?.();
  };
  try {
    await classifier.classify(texts, {
      topK: 3,
      signal: controller.signal,
      onResult: (r) => {
        rows.push({ ...r, text: texts[r.index] });
        pending.push(r);
        frame ||= later(step);
      },
    });
  } catch (e) {
    cancelled = controller.signal.aborted;
    if (!cancelled) {
      $("message").textContent = said(e);
      show("message", true);
    }
  } finally {
    await new Promise((done) => { // the rows still to show, frame by frame
      drained = done;
      if (!frame) step();
    });
    running = null;
    $("classify").disabled = false;
    $("cancel").disabled = true;
  }
  if (!classifier) return;
  if (texts.length === 1 && rows[0]?.error?.code === "query.empty") {
    $("message").textContent = refusal(rows[0].error);
    show("message", true);
  }
  if (texts.length > 1) showSummary(texts.length, performance.now() - t0, cancelled);
  setState(cancelled ? "cancelled" : "answered");
}

$("file").addEventListener("change", async () => {
  const f = $("file").files?.[0];
  if (f) await open(new Uint8Array(await f.arrayBuffer()), f.name);
});
$("batch-file").addEventListener("change", async () => {
  const f = $("batch-file").files?.[0];
  if (!f) return;
  try {
    const texts = await readBatchFile(f);
    $("texts").value = texts.join("\n");
    $("progress-text").textContent = `${texts.length} texts from ${escape(f.name)}: press Classify.`;
  } catch (e) {
    $("message").textContent = said(e);
    show("message", true);
  }
});
$("classify").addEventListener("click", classify);
$("filter").addEventListener("input", applyFilter);
$("cancel").addEventListener("click", () => running?.abort());

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
  offerQuickstart();
  setState("empty");
}

/**
 * With no ?bundle=, the page says where a first bundle is: scripts/serve.mjs (npm run demo) serves
 * the repository's models/ at bundles/, where `make quickstart` writes quickstart.dpedge. The
 * link is offered without asking the server first (a probe's 404 would be a failed request on
 * every site without the file); where the file is missing, opening it says so.
 */
function offerQuickstart() {
  const path = "bundles/quickstart.dpedge";
  const a = element("a", "", "open the quick-start bundle");
  a.id = "quickstart";
  a.href = `?bundle=${path}`;
  $("status").replaceChildren("No bundle open. Choose a .dpedge file above, or ", a,
    ` (${path}: \`make quickstart\` writes it in the repository's models/, which \`npm run demo\` serves).`);
}
