/**
 * The browser's speed in a Web Worker (WorkerClassifier, what the demo page runs) beside the
 * Python runtime on one thread, in one run (the machine is shared and noisy: read the ratios,
 * measured in the same run, not the milliseconds). Prints a Markdown table:
 *
 * - load to first answer: the bundle's bytes in memory to the first text's answer (read,
 *   validate, the engine's session, the check text; in the browser also starting the worker
 *   and compiling onnxruntime-web's WebAssembly);
 * - per text: the median time of one text, short texts (data/assistant/test.jsonl) and long
 *   ones (cut at encoder.max_length, 256 tokens), one text at a time;
 * - the page's longest block, while loading and while classifying: the longest time the page's
 *   main thread did not run its event loop (a 10 ms timer chain): what a person feels as a freeze;
 * - labels as Python's, and the cosine of each text's embedding to Python's (min and median, on
 *   the bench's texts and on exporter/fidelity_texts.py's 61 texts).
 *
 * Browser rows, one per kernel of the engine (webEngine({ kernel }), src/engines/lower_nbits.ts):
 * the in-thread Classifier ("dpedge/browser") with "matmulnbits" (onnxruntime-web's own kernel,
 * which unpacks the encoder's 8-bit weights on every run), "float32" (the weights dequantized at
 * load) and "int8" (the integer rewrite, the default), whose embeddings give the cosines; the
 * worker with "float32" and "int8" on one WebAssembly thread and "int8" on two (threads need a
 * cross-origin isolated page: scripts/serve.mjs sends COOP same-origin and COEP require-corp).
 * SIMD: onnxruntime-web 1.30 ships only its SIMD build (ort-wasm-simd-threaded.wasm);
 * env.wasm.simd only selects which feature check runs, so SIMD cannot be turned off to compare.
 *
 * The machine may be shared: `--rounds R` measures Python and every row R times, the rows in the
 * opposite order every other round, and prints each figure's median over the rounds with the
 * ratio against Python in the same round (and the rounds' range). `--only A,B` keeps the rows
 * whose name holds A or B.
 *
 * `--download MS` adds two worker rows (int8, one thread) where the bundle's bytes arrive MS ms
 * after the start, a simulated download (the bytes are in the page's memory, behind a promise that
 * a timer resolves): one gives them to WorkerClassifier.load once they are there, the other gives
 * it the promise, so that the worker starts and warms its engine up meanwhile. A table more
 * compares the two: start to first answer, bytes there to first answer, the warm-up's time, and
 * the time saved round by round.
 *
 *     node scripts/build.mjs --no-tsc && node bench/worker.mjs [--bundle FILE] [--texts N] [--long N] [--rounds R] [--only A,B] [--download MS] [--python PATH]
 *
 * Defaults: ../models/quickstart.dpedge, 100 short texts, 20 long ones, the project's .venv Python.
 */
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { availableParallelism, cpus } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { CHROMIUM, HAVE_CHROMIUM, launch } from "../scripts/chromium.mjs";
import { startServer } from "../scripts/serve.mjs";
import { buildWorker } from "../scripts/build_worker.mjs";
import { ROOT, WEB, arg, measurePython, median } from "./common.mjs";


const bundlePath = resolve(arg("--bundle", join(ROOT, "models", "quickstart.dpedge")));
const count = Number(arg("--texts", "100"));
const longCount = Number(arg("--long", "20"));
const python = arg("--python", process.env["DPEDGE_PYTHON"] ?? join(ROOT, ".venv", "bin", "python"));
const rounds = Number(arg("--rounds", "1"));
const only = arg("--only", null)?.split(",") ?? null;
const download = arg("--download", null) === null ? null : Number(arg("--download", null));
const all = readFileSync(join(ROOT, "data", "assistant", "test.jsonl"), "utf-8").split("\n").filter((l) => l.trim())
  .map((l) => JSON.parse(l).text);
const short = all.slice(0, count);
// Long texts: consecutive test texts joined until well over 256 tokens (the encoder reads the first 256).
const long = Array.from({ length: longCount }, (_, i) => Array.from({ length: 40 }, (_, j) => all[(i * 40 + j) % all.length]).join(" "));
const texts = [...short, ...long];

/** One fresh page per row (onnxruntime-web fixes its threads once per page, or per worker). */
async function measureBrowser(browser, origin, mode, threads, engineOptions = {}, embedTexts = [], download = null) {
  const page = await browser.context.newPage();
  page.on("pageerror", (e) => console.error("page error:", e.message));
  await page.goto(origin + "/");
  await page.waitForFunction(() => document.body.dataset["state"] === "empty");
  await page.addScriptTag({ url: "/test-page/runtime.js", type: "module" });
  await page.waitForFunction(() => "dpedgeRuntime" in globalThis);
  const result = await page.evaluate(async ({ file, texts, mode, threads, engineOptions, embedTexts, download }) => {
    const bytes = new Uint8Array(await (await fetch(`/bench-bundle/${file}`)).arrayBuffer());
    // The event-loop probe: the longest gap between two runs of a 10 ms timer chain.
    let last = performance.now();
    let block = 0;
    let on = true;
    const tick = () => {
      const now = performance.now();
      block = Math.max(block, now - last);
      last = now;
      if (on) setTimeout(tick, 10);
    };
    setTimeout(tick, 10);
    const stop = async () => {
      await new Promise((done) => setTimeout(done, 20)); // the probe's last tick sees the last block
      on = false;
      return block;
    };
    let t0 = performance.now();
    const labels = [];
    const per = [];
    let engine;
    if (mode === "worker") {
      const { WorkerClassifier } = await import("/vendor/worker.js");
      // A simulated download: the bytes (already in memory) behind a promise that resolves download.ms
      // after t0; given to load as that promise (the worker warms up meanwhile) or, once there, as bytes.
      let arrived = t0;
      const arriving = download && new Promise((done) => setTimeout(done, download.ms)).then(() => {
        arrived = performance.now();
        return bytes;
      });
      const given = download === null ? bytes : download.promise ? arriving : await arriving;
      const clf = await WorkerClassifier.load(given, { threads, ...engineOptions });
      const [r] = await clf.classify([texts[0]]);
      const first = performance.now() - t0;
      const afterBytes = performance.now() - arrived;
      const warmUp = clf.warmUp;
      await new Promise((done) => setTimeout(done, 20));
      const loadBlock = block;
      block = 0;
      labels.push(r.prediction.label);
      let at = performance.now();
      for (const t of texts.slice(1)) { // one text per call, as the Python loop does
        const [x] = await clf.classify([t]);
        labels.push(x.prediction.label);
        per.push(performance.now() - at);
        at = performance.now();
      }
      engine = `${clf.engineName} in a Web Worker`;
      clf.terminate();
      return { engine, first, afterBytes, warmUp, per, labels, loadBlock, block: await stop() };
    }
    const m = globalThis.dpedgeRuntime;
    // Where loading goes: reading and checking the bundle (its SHA-256, msgpack, every field and relation), and
    // compiling onnxruntime-web's WebAssembly; the rest of load is the engine's session and the check text.
    const r0 = performance.now();
    await m.readBundle(bytes);
    const read = performance.now() - r0;
    const w0 = performance.now();
    await WebAssembly.compile(await (await fetch("/vendor/ort-wasm-simd-threaded.wasm")).arrayBuffer());
    const compile = performance.now() - w0;
    block = 0;
    const l0 = performance.now();
    const clf = await m.Classifier.load(bytes, { engine: m.webEngine({ threads, ...engineOptions }) });
    const load = performance.now() - l0;
    labels.push((await clf.classify([texts[0]]))[0].label);
    const first = performance.now() - l0;
    await new Promise((done) => setTimeout(done, 20));
    const loadBlock = block;
    block = 0;
    for (const t of texts.slice(1)) {
      const s = performance.now();
      labels.push((await clf.classify([t]))[0].label);
      per.push(performance.now() - s);
    }
    engine = `${clf.engineName} on the page's thread`;
    const blockNow = await stop();
    // After the timed part: the embeddings (unit vectors) that the cosines against Python's are taken of.
    const embeddings = embedTexts.length ? (await clf.embed(embedTexts)).map((e) => Array.from(e)) : null;
    await clf.close();
    return { engine, first, per, labels, loadBlock, block: blockNow, parts: { read, compile, load }, embeddings };
  }, { file: basename(bundlePath), texts, mode, threads, engineOptions, embedTexts, download });
  await page.close();
  return result;
}

await buildWorker();
// exporter/fidelity_texts.py's 61 texts (read by path: importing the exporter package needs its dependencies).
const fidelity = JSON.parse(spawnSync(python, ["-c", "import importlib.util as u, json, sys; s = u.spec_from_file_location('f', sys.argv[1]); " +
  "m = u.module_from_spec(s); s.loader.exec_module(m); print(json.dumps(list(m.FIDELITY_TEXTS)))", join(ROOT, "exporter", "fidelity_texts.py")],
  { encoding: "utf-8" }).stdout);
const embedTexts = [...texts, ...fidelity];

// The browser rows: [name, mode, threads, engine options, download]. Each round measures Python, then every
// row in a fresh page, in the opposite order on odd rounds (the machine is shared: alternation and
// repeats, then the median over rounds). With --download MS, two rows more: the bundle's bytes arrive
// MS ms after the load's start (a simulated download), given to WorkerClassifier.load once there, or as
// the promise itself, while which the worker starts and warms up onnxruntime-web.
const browserRows = [
  ["Chromium, page, 1 thread, MatMulNBits as it is (weights unpacked per run)", "page", 1, { kernel: "matmulnbits" }],
  ["Chromium, page, 1 thread, float32 rewrite", "page", 1, { kernel: "float32" }],
  ["Chromium, page, 1 thread, int8 rewrite", "page", 1, { kernel: "int8" }],
  ["Chromium, Web Worker, 1 thread, float32 rewrite", "worker", 1, { kernel: "float32" }],
  ["Chromium, Web Worker, 1 thread, int8 rewrite", "worker", 1, { kernel: "int8" }],
  ["Chromium, Web Worker, 2 threads, int8 rewrite", "worker", 2, { kernel: "int8" }],
  ...(download === null ? [] : [
    [`Chromium, Web Worker, 1 thread, int8 rewrite, a ${download} ms download, then load(bytes)`, "worker", 1, { kernel: "int8" },
      { ms: download, promise: false }],
    [`Chromium, Web Worker, 1 thread, int8 rewrite, a ${download} ms download, load(its promise): warm-up meanwhile`, "worker", 1,
      { kernel: "int8" }, { ms: download, promise: true }],
  ]),
].filter(([name]) => only === null || only.some((o) => name.includes(o)));
const runs = new Map(); // name -> results, one per round
const add = (name, r) => runs.set(name, [...(runs.get(name) ?? []), r]);
let server = null;
let browser = null;
if (HAVE_CHROMIUM) {
  server = await startServer({ "/": join(WEB, "demo"), "/bench-bundle/": dirname(bundlePath), "/test-page/": join(WEB, "test", "page") });
  browser = await launch();
} else {
  console.error(`no Chromium at ${CHROMIUM}: the browser rows are left out`);
}
try {
  for (let round = 0; round < rounds; round++) {
    // Python's first answer counts from before its load, as the page's does; it has no page to block.
    const p = measurePython(python, bundlePath, texts, 1, round === 0 ? embedTexts : []);
    add("Python, 1 thread", { ...p, first: p.load + p.first, block: null, loadBlock: null });
    if (browser === null) continue;
    const origin = `http://127.0.0.1:${server.address().port}`;
    for (const [name, mode, threads, options, dl] of round % 2 ? [...browserRows].reverse() : browserRows) {
      add(name, await measureBrowser(browser, origin, mode, threads, options, round === 0 && mode === "page" ? embedTexts : [], dl ?? null));
      console.error(`round ${round + 1}/${rounds}: ${name}`);
    }
  }
} finally {
  await browser?.close();
  server?.close();
}

const ms = (x) => (x === null ? "-" : `${x.toFixed(x < 10 ? 2 : 0)} ms`);
const ratio = (x, base) => `${(x / base).toFixed(2)}x`;
const split = (r) => ({ short: median(r.per.slice(0, short.length - 1)), long: median(r.per.slice(short.length - 1)) });
const py = runs.get("Python, 1 thread");
const cosine = (a, b) => {
  let [d, x, y] = [0, 0, 0];
  a.forEach((v, i) => { d += v * b[i]; x += v * v; y += b[i] * b[i]; });
  return d / Math.sqrt(x * y);
};
/** A row's figures: per round, each against Python's of the same round; the median over rounds, and their range. */
function figures(rs) {
  const of = (f) => {
    const values = rs.map((r, i) => [f(r), f(py[i])]);
    const ratios = values.map(([x, b]) => x / b);
    const mid = median(values.map(([x]) => x));
    const range = rs.length > 1 ? ` ${Math.min(...ratios).toFixed(2)}-${Math.max(...ratios).toFixed(2)}x` : "";
    return `${ms(mid)} (${ratio(median(ratios), 1)}${range ? `;${range}` : ""})`;
  };
  return { first: of((r) => r.first), short: of((r) => split(r).short), long: of((r) => split(r).long) };
}
const kernelOf = (name) => name.match(/(float32|int8) rewrite|as it is/)?.[0] ?? null;
const cosines = new Map(); // kernel -> [bench texts, fidelity texts] cosines against Python
const pyEmb = py[0].embeddings;
for (const [name, rs] of runs) {
  const e = rs[0].embeddings;
  if (!e || !pyEmb) continue;
  const c = e.map((v, i) => cosine(v, pyEmb[i]));
  cosines.set(kernelOf(name), [c.slice(0, texts.length), c.slice(texts.length)]);
}
const cos = (c) => `${Math.min(...c).toFixed(4)}, ${median(c).toFixed(5)}`;
console.log(`\n${basename(bundlePath)} (${(readFileSync(bundlePath).length / 2 ** 20).toFixed(1)} MiB); ${short.length} short texts of ` +
  `data/assistant/test.jsonl and ${long.length} long ones (cut at 256 tokens); ${availableParallelism()} cores ` +
  `(${cpus()[0]?.model.trim()}); ${rounds} round${rounds > 1 ? "s" : ""}, the rows' order reversed every other round; ` +
  "each figure the median over rounds, with the median ratio against Python in the same round (and the rounds' range)\n");
console.log("| runtime | engine | load to first answer | per short text (median) | per 256-token text (median) | page's longest block: loading, classifying | labels as Python | cosine to Python's embedding, min and median: bench texts; fidelity texts |");
console.log("|---|---|---|---|---|---|---|---|");
for (const [name, rs] of runs) {
  const f = figures(rs);
  const same = rs.map((r, i) => r.labels.filter((l, j) => l === py[i].labels[j]).length);
  const c = cosines.get(kernelOf(name));
  const cosText = name.startsWith("Python") ? "1, 1; 1, 1" : c ? `${cos(c[0])}; ${cos(c[1])}` : "-";
  console.log(`| ${name} | ${rs[0].engine} | ${f.first} | ${f.short} | ${f.long} | ${ms(median(rs.map((r) => r.loadBlock ?? NaN)) || null)}, ` +
    `${ms(median(rs.map((r) => r.block ?? NaN)) || null)} | ${Math.min(...same)}/${texts.length} | ${cosText} |`);
}
console.log("\nCosines are of the in-page rows (the worker runs the same engine and kernel); labels: the fewest equal to Python's in any round.");

const parts = [...runs].find(([name, rs]) => rs[0].parts && name.includes("int8"))?.[1][0].parts;
if (parts) {
  console.log(`\nLoading in the page (int8 rewrite, round 1): reading and checking the bundle ${ms(parts.read)}, compiling onnxruntime-web's WebAssembly ` +
    `alone ${ms(parts.compile)}; Classifier.load in all ${ms(parts.load)} (the rest: the rewrite, the engine's session and the check text).`);
}

const downloads = [...runs].filter(([name]) => name.includes("download"));
if (downloads.length) {
  const range = (xs) => (xs.length > 1 ? ` (${Math.min(...xs).toFixed(0)} to ${Math.max(...xs).toFixed(0)})` : "");
  const fig = (xs) => `${ms(median(xs))}${range(xs)}`;
  console.log(`\nA simulated download: the bundle's bytes (in the page's memory) behind a promise resolving ${download} ms after the ` +
    "start; the median over rounds (and the range):\n");
  console.log("| worker, 1 thread, int8 | start to first answer | bytes there to first answer | warm-up in the worker (ran) |");
  console.log("|---|---|---|---|");
  for (const [name, rs] of downloads) {
    const w = rs.filter((r) => r.warmUp);
    console.log(`| ${name.replace(/.*download, /, "")} | ${fig(rs.map((r) => r.first))} | ${fig(rs.map((r) => r.afterBytes))} | ` +
      `${w.length ? `${fig(w.map((r) => r.warmUp.ms))} (${w.filter((r) => r.warmUp.ok).length}/${rs.length})` : "-"} |`);
  }
  const [cold, warm] = downloads.map(([, rs]) => rs);
  if (cold && warm) {
    const saved = cold.map((r, i) => r.first - warm[i].first);
    console.log(`\nThe warm-up saved ${fig(saved)} to the first answer, round by round.`);
  }
}
