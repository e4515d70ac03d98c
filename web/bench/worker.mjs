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
 * - labels as Python's.
 *
 * Browser rows: the in-thread Classifier ("dpedge/browser", for comparison; once more with
 * `webEngine({ dequantizeAtLoad: false })`, onnxruntime-web's own MatMulNBits kernel that unpacks
 * the encoder's 8-bit weights on every run, the engine's path before), and the worker with
 * onnxruntime-web's 1 and 2 WebAssembly threads (threads need a cross-origin isolated page:
 * scripts/serve.mjs sends COOP same-origin and COEP require-corp). SIMD: onnxruntime-web 1.30
 * ships only its SIMD build (ort-wasm-simd-threaded.wasm); env.wasm.simd only selects which
 * feature check runs, so SIMD cannot be turned off to compare.
 *
 *     node scripts/build.mjs --no-tsc && node bench/worker.mjs [--bundle FILE] [--texts N] [--long N] [--python PATH]
 *
 * Defaults: ../models/quickstart.dpedge, 100 short texts, 20 long ones, the project's .venv Python.
 */
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
const all = readFileSync(join(ROOT, "data", "assistant", "test.jsonl"), "utf-8").split("\n").filter((l) => l.trim())
  .map((l) => JSON.parse(l).text);
const short = all.slice(0, count);
// Long texts: consecutive test texts joined until well over 256 tokens (the encoder reads the first 256).
const long = Array.from({ length: longCount }, (_, i) => Array.from({ length: 40 }, (_, j) => all[(i * 40 + j) % all.length]).join(" "));
const texts = [...short, ...long];

/** One fresh page per row (onnxruntime-web fixes its threads once per page, or per worker). */
async function measureBrowser(browser, origin, mode, threads, engineOptions = {}) {
  const page = await browser.context.newPage();
  page.on("pageerror", (e) => console.error("page error:", e.message));
  await page.goto(origin + "/");
  await page.waitForFunction(() => document.body.dataset["state"] === "empty");
  await page.addScriptTag({ url: "/test-page/runtime.js", type: "module" });
  await page.waitForFunction(() => "dpedgeRuntime" in globalThis);
  const result = await page.evaluate(async ({ file, texts, mode, threads, engineOptions }) => {
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
      const clf = await WorkerClassifier.load(bytes, { threads });
      const [r] = await clf.classify([texts[0]]);
      const first = performance.now() - t0;
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
      return { engine, first, per, labels, loadBlock, block: await stop() };
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
    await clf.close();
    return { engine, first, per, labels, loadBlock, block: await stop(), parts: { read, compile, load } };
  }, { file: basename(bundlePath), texts, mode, threads, engineOptions });
  await page.close();
  return result;
}

await buildWorker();
// Python's first answer counts from before its load, as the page's does; it has no page to block.
const python1 = measurePython(python, bundlePath, texts, 1);
const rows = [["Python, 1 thread", { ...python1, first: python1.load + python1.first, block: null, loadBlock: null }]];
if (HAVE_CHROMIUM) {
  const server = await startServer({ "/": join(WEB, "demo"), "/bench-bundle/": dirname(bundlePath),
    "/test-page/": join(WEB, "test", "page") });
  const origin = `http://127.0.0.1:${server.address().port}`;
  const browser = await launch();
  try {
    // onnxruntime-web's own MatMulNBits kernel, which unpacks the 8-bit weights on every run (the
    // engine's path before it dequantized them once at load, src/engines/lower_nbits.ts).
    rows.push(["Chromium, in the page, 1 thread, weights unpacked per run", await measureBrowser(browser, origin, "page", 1, { dequantizeAtLoad: false })]);
    rows.push(["Chromium, in the page, 1 thread", await measureBrowser(browser, origin, "page", 1)]);
    rows.push(["Chromium, Web Worker, 1 thread", await measureBrowser(browser, origin, "worker", 1)]);
    rows.push(["Chromium, Web Worker, 2 threads", await measureBrowser(browser, origin, "worker", 2)]);
  } finally {
    await browser.close();
    server.close();
  }
} else {
  console.error(`no Chromium at ${CHROMIUM}: the browser rows are left out`);
}

const ms = (x) => (x === null ? "-" : `${x.toFixed(x < 10 ? 2 : 0)} ms`);
const ratio = (x, base) => `${(x / base).toFixed(2)}x`;
const py = rows[0][1];
const split = (r) => ({ short: median(r.per.slice(0, short.length - 1)), long: median(r.per.slice(short.length - 1)) });
const base = split(py);
console.log(`\n${basename(bundlePath)} (${(readFileSync(bundlePath).length / 2 ** 20).toFixed(1)} MiB); ${short.length} short texts of ` +
  `data/assistant/test.jsonl and ${long.length} long ones (cut at 256 tokens); ${availableParallelism()} cores ` +
  `(${cpus()[0]?.model.trim()}); ratios against Python in the same run\n`);
console.log("| runtime | engine | load to first answer | per short text (median) | per 256-token text (median) | page's longest block: loading, classifying | labels as Python |");
console.log("|---|---|---|---|---|---|---|");
for (const [name, r] of rows) {
  const s = split(r);
  const same = r.labels.filter((l, i) => l === py.labels[i]).length;
  console.log(`| ${name} | ${r.engine} | ${ms(r.first)} (${ratio(r.first, py.first)}) | ${ms(s.short)} (${ratio(s.short, base.short)}) | ` +
    `${ms(s.long)} (${ratio(s.long, base.long)}) | ${ms(r.loadBlock)}, ${ms(r.block)} | ${same}/${texts.length} |`);
}

const parts = rows.find(([name, r]) => r.parts && !name.includes("unpacked"))?.[1].parts;
if (parts) {
  console.log(`\nLoading in the page: reading and checking the bundle ${ms(parts.read)}, compiling onnxruntime-web's WebAssembly ` +
    `alone ${ms(parts.compile)}; Classifier.load in all ${ms(parts.load)} (the rest: the engine's session and the check text).`);
}
