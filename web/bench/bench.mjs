/**
 * How fast the JavaScript runtime answers, beside the Python runtime, on one bundle and one set
 * of texts, all in one run (this machine is shared and noisy: read the ratios, not the
 * milliseconds). Prints a Markdown table:
 *
 * - load: bundle bytes in memory to a classifier ready to answer (read, validate, engine
 *   session, the check text's embedding; in the browser also compiling onnxruntime-web's
 *   WebAssembly);
 * - first answer: the first text after load;
 * - per text: the median of classifying the texts one at a time (after the first);
 *
 * for Python (`runtime.Classifier`, onnxruntime on the CPU), Node (onnxruntime-node in its budgeted
 * child process, and in this process without budgets) and headless
 * Chromium (onnxruntime-web, WebAssembly, one thread and all threads), and what a page downloads:
 * the bundle (raw, gzip and brotli, as a server may send it) and the runtime's own files.
 *
 *     npm run bench -- [--bundle FILE] [--texts-file FILE] [--texts N] [--python PATH]
 *
 * The texts: --texts-file FILE (JSON lines with a "text" field, as data/<name>/test.jsonl, or
 * one text per line for any other file name); else, for a bundle of a conformance corpus
 * (a folder whose parent holds cases.json listing the bundle), the corpus's queries for it that
 * classify; else data/assistant/test.jsonl. The first N (--texts, default 50) are measured.
 * Defaults: the quick-start bundle (../models/quickstart.dpedge, `make bundle`), the project's
 * .venv Python.
 */
import { existsSync, readFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { brotliCompressSync, constants, gzipSync } from "node:zlib";
import { HAVE_CHROMIUM, CHROMIUM, launch } from "../scripts/chromium.mjs";
import { startServer } from "../scripts/serve.mjs";
import { measure } from "./measure.mjs";
import { ROOT, WEB, arg, measurePython, median } from "./common.mjs";


const bundlePath = resolve(arg("--bundle", join(ROOT, "models", "quickstart.dpedge")));
const count = Number(arg("--texts", "50"));
const python = arg("--python", process.env["DPEDGE_PYTHON"] ?? join(ROOT, ".venv", "bin", "python"));

/** Texts of a JSON-lines file ("text" of each line), or of a plain file (one per line). */
function readTexts(file) {
  const lines = readFileSync(file, "utf-8").split("\n").filter((l) => l.trim());
  if (!file.endsWith(".jsonl")) return lines;
  return lines.map((l, i) => {
    let row;
    try {
      row = JSON.parse(l);
    } catch {
      row = null;
    }
    if (typeof row?.text !== "string") throw new Error(`${file}, line ${i + 1}: not a JSON object with a "text" string`);
    return row.text;
  });
}

/** The texts of a conformance corpus for one of its bundles (its queries that classify), or null if the bundle is not in one. */
function corpusTexts(bundle) {
  const cases = join(dirname(dirname(bundle)), "cases.json");
  if (!existsSync(cases)) return null;
  const file = `${basename(dirname(bundle))}/${basename(bundle)}`;
  const c = JSON.parse(readFileSync(cases, "utf-8")).accept?.find((x) => x.file === file);
  const queries = (c?.queries ?? []).filter((q) => !q.code).map((q) => q.text);
  return queries.length ? { texts: queries, source: `the corpus's queries for ${file} (${cases})` } : null;
}

const textsFile = arg("--texts-file", null);
const { texts: allTexts, source } = textsFile !== null ? { texts: readTexts(resolve(textsFile)), source: textsFile }
  : corpusTexts(bundlePath) ?? { texts: readTexts(join(ROOT, "data", "assistant", "test.jsonl")), source: "data/assistant/test.jsonl" };
const texts = allTexts.slice(0, count);
if (texts.length < 2) throw new Error(`${source} has ${texts.length} text(s): the bench needs at least 2`);
const bytes = new Uint8Array(readFileSync(bundlePath));

/** Node's default engine (onnxruntime-node in a child process, under the budgets), or the same session in this process. */
async function measureNode(inProcess) {
  const { Classifier, nodeEngine } = await import("../dist/index.js");
  return measure(Classifier, nodeEngine({ inProcess }), bytes, texts);
}

/** One fresh page per thread count: onnxruntime-web fixes its threads when its first model loads. */
async function measureBrowser(browser, origin, threads) {
  const page = await browser.context.newPage();
  await page.goto(origin + "/");
  await page.waitForFunction(() => document.body.dataset["state"] === "empty");
  await page.addScriptTag({ url: "/test-page/runtime.js", type: "module" });
  await page.waitForFunction(() => "dpedgeRuntime" in globalThis);
  const result = await page.evaluate(async ({ file, texts, threads }) => {
    const m = globalThis.dpedgeRuntime;
    const { measure } = await import("/bench/measure.mjs");
    const bytes = new Uint8Array(await (await fetch(`/bench-bundle/${file}`)).arrayBuffer());
    return measure(m.Classifier, m.webEngine({ threads }), bytes, texts);
  }, { file: basename(bundlePath), texts, threads });
  await page.close();
  return result;
}

const rows = [];
const py = measurePython(python, bundlePath, texts);
rows.push(["Python", py]);
rows.push(["Node", await measureNode(false)]);
rows.push(["Node, in process (no budgets)", await measureNode(true)]);
if (HAVE_CHROMIUM) {
  const server = await startServer({ "/": join(WEB, "demo"), "/bench-bundle/": dirname(bundlePath),
    "/test-page/": join(WEB, "test", "page"), "/bench/": join(WEB, "bench") });
  const origin = `http://127.0.0.1:${server.address().port}`;
  const browser = await launch();
  try {
    rows.push(["Chromium, 1 thread", await measureBrowser(browser, origin, 1)]);
    rows.push([`Chromium, all threads`, await measureBrowser(browser, origin, 0)]);
  } finally {
    await browser.close();
    server.close();
  }
} else {
  console.error(`no Chromium at ${CHROMIUM}: the browser rows are left out`);
}

const ms = (x) => `${x.toFixed(x < 10 ? 2 : 0)} ms`;
const ratio = (x, base) => `${(x / base).toFixed(2)}x`;
const pyPer = median(py.per);
console.log(`\n${basename(bundlePath)} (${(bytes.length / 2 ** 20).toFixed(1)} MiB), ${texts.length} texts of ` +
  `${source}, ${availableParallelism()} cores; ratios against Python in the same run\n`);
console.log("| runtime | engine | load | first answer | per text (median) | labels as Python |");
console.log("|---|---|---|---|---|---|");
for (const [name, r] of rows) {
  const same = r.labels.filter((l, i) => l === py.labels[i]).length;
  console.log(`| ${name} | ${r.engine} | ${ms(r.load)} (${ratio(r.load, py.load)}) | ${ms(r.first)} (${ratio(r.first, py.first)}) | ` +
    `${ms(median(r.per))} (${ratio(median(r.per), pyPer)}) | ${same}/${texts.length} |`);
}

const mib = (n) => `${(n / 2 ** 20).toFixed(2)} MiB`;
const vendor = join(WEB, "demo", "vendor");
const files = ["dpedge.js", "ort-wasm-simd-threaded.mjs", "ort-wasm-simd-threaded.wasm"].map((f) => readFileSync(join(vendor, f)));
const runtimeBytes = files.reduce((s, f) => s + f.length, 0);
const gz = (b) => gzipSync(b, { level: 9 }).length;
const br = (b) => brotliCompressSync(b, { params: { [constants.BROTLI_PARAM_QUALITY]: 9 } }).length;
console.log("\n| download | raw | gzip -9 | brotli 9 |\n|---|---|---|---|");
console.log(`| the bundle | ${mib(bytes.length)} | ${mib(gz(bytes))} | ${mib(br(bytes))} |`);
console.log(`| the runtime (dpedge.js, onnxruntime-web's loader and WebAssembly) | ${mib(runtimeBytes)} | ` +
  `${mib(files.reduce((s, f) => s + gz(f), 0))} | ${mib(files.reduce((s, f) => s + br(f), 0))} |`);

