/**
 * The runtime in a real headless Chromium (Debian's chromium, driven by playwright-core):
 *
 * - the demo page, served with the quick-start bundle by a local static server, classifies the
 *   quick start's seven texts with the labels `python -m runtime.classify` gives, and its
 *   screenshot is written to web/test-output/demo.png;
 * - a truncated bundle picked in the page is refused with a readable message;
 * - every golden malformed bundle is refused in the page with the Python reader's phrases;
 * - the golden texts of the three ONNX bundles, run through onnxruntime-web's WebAssembly
 *   kernels on one thread and on all threads, give Python's token ids, and labels and scores
 *   within the browser tolerance below (WebAssembly kernels round differently from the CPU
 *   ones Python uses, so embeddings differ slightly; a label may differ only on a near-tie or
 *   where a text lies so near a hyperplane that the difference moves it to another bucket);
 * - no request leaves the page's origin (every request is recorded, and any other is aborted).
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync } from "node:fs";
import type { Server } from "node:http";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServer } from "../scripts/serve.mjs";
import { CHROMIUM, HAVE_CHROMIUM, launch } from "../scripts/chromium.mjs";
import { readBundle, type Bundle } from "../src/reader.js";
import { fixture, golden, HAVE_FIXTURES, readFixture, REQUIRED, SKIP_MESSAGE } from "./fixtures.js";

const WEB = fileURLToPath(new URL("..", import.meta.url));
const OUTPUT = join(WEB, "test-output");
/**
 * Browser tolerance, measured (docs/web.md): onnxruntime-web 1.30's WebAssembly int8 kernels
 * round differently from the CPU kernels Python uses. On the 205 golden texts the embeddings
 * differ by at most 0.016 per coordinate (median 0.006; cosine to Python's at least 0.995) and
 * the scores (shares of 1) by at most 0.067, on one thread and on two. The bounds leave room
 * for other CPUs' WebAssembly SIMD.
 */
const BROWSER_SCORE_ATOL = 0.1;
const BROWSER_MIN_COSINE = 0.99;
/** A label may differ from Python's when Python's two best scores are closer than this... */
const NEAR_TIE = 2 * BROWSER_SCORE_ATOL;

interface PageCase {
  ids: number[];
  embedding: number[];
  buckets: number[];
  scores: number[];
  label: string;
}

/**
 * ...or when a bucket differs because the embedding lies so close to a hyperplane that the
 * kernels' rounding can cross it: |p . x - offset| <= ||p||_1 max_j |x_j - x'_j| (with x the
 * Python embedding and x' the browser's), the most the difference can move that product.
 * A vote table's cell then changes by an integer, so the score is not a near-tie.
 */
function cosine(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let ab = 0;
  let aa = 0;
  let bb = 0;
  for (let i = 0; i < a.length; i++) {
    ab += a[i]! * b[i]!;
    aa += a[i]! ** 2;
    bb += b[i]! ** 2;
  }
  return ab / Math.sqrt(aa * bb);
}

function flipsExplained(b: Bundle, python: Float32Array, page: number[], want: number[], got: number[]): boolean {
  const { T, H, D } = b.dims;
  let maxDiff = 0;
  python.forEach((v, j) => (maxDiff = Math.max(maxDiff, Math.abs(page[j]! - v))));
  for (let t = 0; t < T; t++) {
    const flipped = want[t]! ^ got[t]!;
    for (let h = 0; h < H; h++) {
      if (!(flipped & (1 << h))) continue;
      const row = (t * H + h) * D;
      let dot = 0;
      let l1 = 0;
      for (let j = 0; j < D; j++) {
        dot += b.hyperplanes![row + j]! * python[j]!;
        l1 += Math.abs(b.hyperplanes![row + j]!);
      }
      const offset = b.offsets === null ? 0 : b.offsets[t * H + h]!;
      // 2x: float32 products and sums in either engine round too.
      if (Math.abs(dot - offset) > 2 * l1 * maxDiff + 1e-6) return false;
    }
  }
  return true;
}

type Browser = Awaited<ReturnType<typeof launch>>;

if (!HAVE_CHROMIUM) {
  const why = `no Chromium at ${CHROMIUM} (apt-get install -y chromium, or set DPEDGE_CHROMIUM)`;
  if (REQUIRED) throw new Error(`DPEDGE_WEB_REQUIRE is set but there is ${why}`);
  console.warn(`dpedge web tests: skipping the browser tests: ${why}`);
}
const run = HAVE_FIXTURES && HAVE_CHROMIUM;
describe.skipIf(!run)(`in headless Chromium (${run ? "fixtures and Chromium found" : SKIP_MESSAGE + "; and /usr/bin/chromium"})`, () => {
  let server: Server;
  let browser: Browser;
  let origin = "";
  const requests: string[] = [];

  beforeAll(async () => {
    // The page's runtime and onnxruntime-web's files, fresh from src/ (about a second).
    execFileSync(process.execPath, [join(WEB, "scripts", "build.mjs"), "--no-tsc"], { stdio: "inherit" });
    server = await startServer({ "/": join(WEB, "demo"), "/bundles/": fixture(), "/golden/": fixture("golden"),
      "/test-page/": join(WEB, "test", "page") });
    const address = server.address();
    origin = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
    browser = await launch();
    browser.context.on("request", (r) => requests.push(r.url()));
    // Belt and braces: anything addressed elsewhere would be recorded above, and is not let out.
    await browser.context.route((url) => url.origin !== origin && url.protocol !== "data:" && url.protocol !== "blob:",
      (route) => route.abort());
  });

  afterAll(async () => {
    await browser?.close();
    await new Promise((done) => server?.close(done));
  });

  async function openPage(path: string, until: string[] = ["ready", "refused", "empty"]): Promise<Page> {
    const page = await browser.context.newPage();
    page.on("pageerror", (e) => console.error("page error:", e.message));
    await page.goto(origin + path);
    await page.waitForFunction((states) => states.includes(document.body.dataset["state"] ?? ""), until, { timeout: 120_000 });
    return page;
  }

  /** A page with the runtime module at globalThis.dpedgeRuntime, for page.evaluate. */
  async function runtimePage(): Promise<Page> {
    const page = await openPage("/", ["empty"]);
    await page.addScriptTag({ url: "/test-page/runtime.js", type: "module" });
    await page.waitForFunction(() => "dpedgeRuntime" in globalThis);
    return page;
  }

  it("classifies the quick start's seven texts as `python -m runtime.classify` does", async () => {
    const quick = JSON.parse(readFileSync(fixture("quickstart.json"), "utf-8")) as { texts: string[]; answers: { label: string }[] };
    const page = await openPage("/?bundle=bundles/quickstart.dpedge");
    expect(await page.evaluate(() => document.body.dataset["state"])).toBe("ready");
    expect(await page.textContent("#privacy")).toContain("epsilon = 8, delta = 0 (pure DP)");
    await page.fill("#texts", quick.texts.join("\n"));
    await page.click("#classify");
    await page.waitForFunction(() => document.body.dataset["state"] === "answered", undefined, { timeout: 60_000 });
    const labels = await page.$$eval("#results > li", (lis) => lis.map((li) => (li as HTMLElement).dataset["label"]));
    expect(labels).toEqual(quick.answers.map((a) => a.label));
    mkdirSync(OUTPUT, { recursive: true });
    await page.screenshot({ path: join(OUTPUT, "demo.png"), fullPage: true });
    console.log(`${await page.textContent("#engine")} Screenshot: web/test-output/demo.png`);
    await page.close();
  });

  it("refuses a truncated bundle with a readable message", async () => {
    const page = await openPage("/");
    const whole = readFixture("quickstart.dpedge");
    await page.setInputFiles("#file", { name: "quickstart-truncated.dpedge", mimeType: "application/octet-stream",
      buffer: Buffer.from(whole.subarray(0, Math.floor(whole.length / 2))) });
    await page.waitForFunction(() => document.body.dataset["state"] === "refused", undefined, { timeout: 60_000 });
    expect(await page.isVisible("#error")).toBe(true);
    expect(await page.textContent("#error")).toBe(
      "This bundle cannot be used: the bundle is truncated or corrupted: it does not end with its 'sha256' entry");
    expect(await page.isVisible("#ask")).toBe(false);
    await page.close();
  });

  it("refuses every golden malformed bundle with the Python reader's phrases", async () => {
    const g = golden();
    const page = await runtimePage();
    const messages = await page.evaluate(async (files) => {
      const m = (globalThis as unknown as { dpedgeRuntime: any }).dpedgeRuntime; // eslint-disable-line @typescript-eslint/no-explicit-any
      const out: string[] = [];
      for (const file of files) {
        const bytes = new Uint8Array(await (await fetch(`/golden/${file}`)).arrayBuffer());
        try {
          await m.readBundle(bytes);
          out.push("accepted");
        } catch (e) {
          out.push(`${(e as Error).name}: ${(e as Error).message}`);
        }
      }
      return out;
    }, g.malformed.map((x) => x.file));
    const problems = g.malformed.flatMap((x, i) => {
      const said = messages[i]!;
      const missing = x.phrases.filter((p) => !said.includes(p));
      return !said.startsWith("BundleError: ") || missing.length ? [`${x.file}: ${said}`] : [];
    });
    expect(problems).toEqual([]);
    await page.close();
  });

  it.each([[1], [undefined]])("answers the golden texts of the ONNX bundles like Python with %s WebAssembly thread(s) (undefined: all)", async (threads) => {
    const g = golden();
    const lines: string[] = [];
    for (const entry of g.bundles) {
      if (entry.file.includes("tflite")) continue;
      const page = await runtimePage();
      const got = (await page.evaluate(async ({ file, texts, threads }) => {
        const m = (globalThis as unknown as { dpedgeRuntime: any }).dpedgeRuntime; // eslint-disable-line @typescript-eslint/no-explicit-any
        const bytes = new Uint8Array(await (await fetch(`/golden/${file}`)).arrayBuffer());
        const clf = await m.Classifier.load(bytes, { engine: m.webEngine({ threads }) });
        const cases = [];
        for (const text of texts) {
          const [emb] = await clf.embed([text]);
          const p = clf.score(emb);
          cases.push({ ids: clf.tokenize(text), embedding: Array.from(emb as Float32Array),
            buckets: clf.scorer.hasher === null ? [] : clf.scorer.hasher.buckets(Float64Array.from(emb as Float32Array)),
            scores: p.scores.map((s: { score: number }) => s.score), label: p.label });
        }
        return { engine: clf.engineName as string, isolated: crossOriginIsolated, cases };
      }, { file: entry.file, texts: entry.cases.map((c) => c.text), threads })) as
        { engine: string; isolated: boolean; cases: PageCase[] };
      await page.close();
      const bundle = await readBundle(readFixture("golden", entry.file));
      let embDiff = 0;
      let minCosine = 1;
      let scoreDiff = 0;
      let nearTies = 0;
      let flips = 0;
      let flipLabels = 0;
      const wrong: string[] = [];
      entry.cases.forEach((c, i) => {
        const p = got.cases[i]!;
        expect(p.ids, c.text).toEqual(c.token_ids);
        const want = new Float32Array(new Uint8Array(c.embedding).buffer);
        want.forEach((v, j) => (embDiff = Math.max(embDiff, Math.abs(p.embedding[j]! - v))));
        minCosine = Math.min(minCosine, cosine(want, p.embedding));
        const flipped = c.buckets !== null && c.buckets.some((v, t) => v !== p.buckets[t]);
        if (flipped) {
          flips++;
          if (!flipsExplained(bundle, want, p.embedding, c.buckets!, p.buckets)) {
            wrong.push(`${JSON.stringify(c.text).slice(0, 60)}: buckets ${p.buckets}, Python ${c.buckets}, not at a hyperplane`);
          }
        } else {
          c.scores.forEach((v, j) => (scoreDiff = Math.max(scoreDiff, Math.abs(p.scores[j]! - v))));
        }
        if (p.label !== c.label) {
          const sorted = [...c.scores].sort((a, b) => b - a);
          if (flipped) flipLabels++;
          else if (sorted[0]! - sorted[1]! < NEAR_TIE) nearTies++;
          else wrong.push(`${JSON.stringify(c.text).slice(0, 60)}: ${p.label}, Python ${c.label}`);
        }
      });
      lines.push(`${entry.file} on ${got.engine}${got.isolated ? "" : " (not isolated)"}: ${entry.cases.length} texts, ` +
        `embeddings within ${embDiff.toExponential(1)} (cosine >= ${minCosine.toFixed(4)}), scores within ${scoreDiff.toExponential(1)} ` +
        `(texts with Python's buckets), ${nearTies} near-tie label(s) differ; ${flips} text(s) at a hyperplane ` +
        `change a bucket, ${flipLabels} of them the label`);
      console.log(lines[lines.length - 1]);
      expect(wrong).toEqual([]);
      expect(minCosine).toBeGreaterThanOrEqual(BROWSER_MIN_COSINE);
      expect(scoreDiff).toBeLessThanOrEqual(BROWSER_SCORE_ATOL);
      if (threads !== 1) expect(got.isolated).toBe(true);
    }
    expect(lines.length).toBe(3);
  });

  it("sent no request outside the page's origin", () => {
    const outside = requests.filter((u) => !u.startsWith(origin + "/") && !u.startsWith("data:") && !u.startsWith("blob:"));
    expect(outside).toEqual([]);
    expect(requests.some((u) => u.endsWith("/bundles/quickstart.dpedge"))).toBe(true);
    expect(requests.some((u) => u.endsWith(".wasm"))).toBe(true);
  });
});
