/**
 * The Web Worker classifier and the demo page a person uses, in a real headless Chromium
 * (Debian's chromium, playwright-core; the flags of scripts/chromium.mjs):
 *
 * - WorkerClassifier's answers equal the in-thread Classifier's, text by text (labels, every
 *   score, the top 3; the same refusal codes), on every engine bundle of the committed corpus
 *   (and the real one with DPEDGE_REAL_CORPUS);
 * - the page stays responsive during a 200-text batch: while it runs, a click on the auditor's
 *   <details> takes effect within CLICK_MS, and a 10 ms timer chain on the page's main thread
 *   never waits more than BLOCK_MS; results stream (the progress the page shows takes many
 *   values before the end). The same probe around the in-thread Classifier on the same texts
 *   sees one block as long as the whole batch: it detects the freeze the worker removes;
 * - a bundle is refused with the in-thread Classifier's code and path, and aborting a load stops it;
 * - loading from a promise of the bytes (a download; the worker warms its engine up meanwhile)
 *   gives what loading from the bytes gives: the same facts, answers and refusals; a promise that
 *   rejects rejects the load with its error;
 * - cancel stops a batch with the results so far and their summary;
 * - an empty text and texts with nothing readable get the runtime's query.empty refusal in
 *   words; a long text is shown cut, with a note that only encoder.max_length tokens were read;
 *   the summary counts labels and skipped texts; the CSV and JSON downloads hold every row;
 * - no console error, no request that failed (the favicon is inline), and every request of the
 *   page and of its workers went to the page's own origin. What that covers: Playwright's request
 *   events for the browser context (the page, its Web Worker and onnxruntime-web's threads), not
 *   Chromium's own traffic (component updates, sync, autofill, safe browsing), which the flags of
 *   scripts/chromium.mjs turn off (docs/web.md, "The demo page").
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import type { Server } from "node:http";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServer } from "../scripts/serve.mjs";
import { CHROMIUM, HAVE_CHROMIUM, launch } from "../scripts/chromium.mjs";
import { buildWorker } from "../scripts/build_worker.mjs";
import { readBundle } from "../src/reader.js";
import { corpora } from "./corpus.js";

const WEB = fileURLToPath(new URL("..", import.meta.url));
/** A click's effect must be visible within this (milliseconds, measured from the test's side). */
const CLICK_MS = 500;
/** The page's main thread may not go longer than this without running its event loop during a batch. */
const BLOCK_MS = 500;
/**
 * The batch: 200 texts of the real encoder (tens of ms each); the committed corpus's tiny encoder
 * answers a text in about 3 ms, so without the real corpus the batch is 1000 texts, to last
 * long enough for a click in the middle.
 */
const BATCH = corpora.length > 1 ? 200 : 1000;

const mounts = corpora.map((c, i) => ({ corpus: c, url: `/corpus${i}/` }));
const committed = mounts[0]!;
/** The batch's bundle: the real encoder's when its corpus is there (a text takes tens of ms), else the committed tiny one. */
const heavy = mounts[mounts.length - 1]!;

if (!HAVE_CHROMIUM) console.warn(`dpedge web tests: skipping the worker tests: no Chromium at ${CHROMIUM}`);

type Runtime = any; // eslint-disable-line @typescript-eslint/no-explicit-any

/**
 * BATCH texts of the corpus's queries; with the real encoder one in four long (about 300 words: truncated at its
 * 256 tokens, and ten times slower than a short one). The tiny encoder reads few tokens, so its batch stays short:
 * a box of 1000 long lines would make typing in it slow, whatever the worker does.
 */
function batchTexts(): string[] {
  const qs = heavy.corpus.cases.accept.find((c) => c.file === "accept/default.dpedge")!.queries!
    .filter((q) => !q.code && !/[\r\n]/.test(q.text) && q.text.trim().length > 3).map((q) => q.text);
  return Array.from({ length: BATCH }, (_, i) => `${i} ${qs[i % qs.length]}` + (corpora.length > 1 && i % 4 === 1 ? ` ${qs[(i + 1) % qs.length]}`.repeat(30) : ""));
}

describe.skipIf(!HAVE_CHROMIUM)("the Web Worker classifier and the demo page, in headless Chromium", () => {
  let server: Server;
  let browser: Awaited<ReturnType<typeof launch>>;
  let origin = "";
  const requests: string[] = [];
  const failed: string[] = [];
  const consoleErrors: string[] = [];

  beforeAll(async () => {
    execFileSync(process.execPath, [join(WEB, "scripts", "build.mjs"), "--no-tsc"], { stdio: "inherit" });
    await buildWorker();
    server = await startServer({ "/": join(WEB, "demo"), "/test-page/": join(WEB, "test", "page"),
      ...Object.fromEntries(mounts.map((m) => [m.url, m.corpus.dir])) });
    const address = server.address();
    origin = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
    browser = await launch();
    browser.context.on("request", (r) => requests.push(r.url()));
    browser.context.on("requestfailed", (r) => failed.push(`${r.url()}: ${r.failure()?.errorText}`));
    browser.context.on("response", (r) => {
      if (r.status() >= 400) failed.push(`${r.url()}: HTTP ${r.status()}`);
    });
    await browser.context.route((url) => url.origin !== origin && url.protocol !== "data:" && url.protocol !== "blob:",
      (route) => route.abort());
  });

  afterAll(async () => {
    await browser?.close();
    await new Promise((done) => server?.close(done));
  });

  async function openPage(path: string, until: string[] = ["ready", "refused", "empty"]): Promise<Page> {
    const page = await browser.context.newPage();
    page.on("pageerror", (e) => consoleErrors.push(`page error: ${e.message}`));
    page.on("console", (m) => {
      if (m.type() === "error") consoleErrors.push(m.text());
    });
    await page.goto(origin + path);
    await page.waitForFunction((states) => states.includes(document.body.dataset["state"] ?? ""), until, { timeout: 120_000 });
    return page;
  }

  it.each(mounts)("answers as the in-thread Classifier on every engine bundle of $url", async ({ url, corpus }) => {
    const page = await openPage("/", ["empty"]);
    await page.addScriptTag({ url: "/test-page/runtime.js", type: "module" });
    await page.addScriptTag({ url: "/test-page/worker.js", type: "module" });
    await page.waitForFunction(() => "dpedgeRuntime" in globalThis && "dpedgeWorker" in globalThis);
    const cases = corpus.cases.accept.filter((c) => c.engine === "onnx" && !c.load);
    expect(cases.length).toBeGreaterThan(0);
    const got = await page.evaluate(async ({ base, cases }) => {
      const g = globalThis as unknown as { dpedgeRuntime: Runtime; dpedgeWorker: Runtime };
      const m = g.dpedgeRuntime;
      const get = async (file: string): Promise<Uint8Array> => new Uint8Array(await (await fetch(base + file)).arrayBuffer());
      const out: { file: string; same: number; differ: string[] }[] = [];
      for (const c of cases) {
        const texts = (c.queries ?? []).map((q) => q.text);
        const pack = c.pack === undefined ? undefined : await get(c.pack);
        const bytes = await get(c.file);
        const inThread = await m.Classifier.load(bytes, { engine: m.webEngine({ threads: 1 }), encoderPack: pack });
        const inWorker = await g.dpedgeWorker.WorkerClassifier.load(bytes, { threads: 1, encoderPack: pack });
        const results = await inWorker.classify(texts, { topK: 3 });
        const differ: string[] = [];
        let same = 0;
        for (const [i, t] of texts.entries()) {
          let want: unknown;
          try {
            want = { prediction: (await inThread.classify([t], { topK: 3 }))[0], code: null };
          } catch (e) {
            want = { prediction: null, code: (e as { code: string }).code };
          }
          const r = results[i];
          const have = { prediction: r.prediction, code: r.error?.code ?? null };
          if (JSON.stringify(have) === JSON.stringify(want) && r.index === i) same++;
          else differ.push(`${JSON.stringify(t).slice(0, 40)}: ${JSON.stringify(have).slice(0, 200)} != ${JSON.stringify(want).slice(0, 200)}`);
        }
        // predict() is classify's answer as the in-thread Classifier gives it: the first refusal thrown.
        const fine = texts.filter((_, i) => results[i].error === null).slice(0, 3);
        if (JSON.stringify(await inWorker.predict(fine, { topK: 3 })) !== JSON.stringify(await inThread.classify(fine, { topK: 3 }))) {
          differ.push("predict");
        }
        inWorker.terminate();
        await inThread.close();
        out.push({ file: c.file, same, differ });
      }
      return out;
    }, { base: url, cases });
    for (const [i, r] of got.entries()) {
      expect(r.differ, r.file).toEqual([]);
      expect(r.same).toBe(cases[i]!.queries!.length);
    }
    await page.close();
  });

  it("refuses a bundle as the in-thread Classifier does, and stops loading when aborted", async () => {
    const page = await openPage("/", ["empty"]);
    await page.addScriptTag({ url: "/test-page/worker.js", type: "module" });
    await page.waitForFunction(() => "dpedgeWorker" in globalThis);
    const refuse = committed.corpus.cases.refuse.filter((c) => c.pack === undefined).slice(0, 12);
    const got = await page.evaluate(async ({ base, refuse, whole }) => {
      const w = (globalThis as unknown as { dpedgeWorker: Runtime }).dpedgeWorker;
      const get = async (file: string): Promise<Uint8Array> => new Uint8Array(await (await fetch(base + file)).arrayBuffer());
      const out: string[] = [];
      for (const c of refuse) {
        try {
          (await w.WorkerClassifier.load(await get(c.file))).terminate();
          out.push(`${c.file}: accepted`);
        } catch (e) {
          const { name, code, path } = e as { name: string; code: string; path: string };
          if (name !== "BundleError" || code !== c.code || path !== c.path) out.push(`${c.file}: ${name} ${code} at ${path}, want ${c.code} at ${c.path}`);
        }
      }
      const controller = new AbortController();
      const loading = w.WorkerClassifier.load(await get(whole), { signal: controller.signal });
      controller.abort();
      const aborted = await loading.then(() => "loaded", (e: Error) => e.name);
      return { out, aborted };
    }, { base: committed.url, refuse, whole: "accept/default.dpedge" });
    expect(got.out).toEqual([]);
    expect(got.aborted).toBe("AbortError");
    await page.close();
  });

  it.each(mounts)("loads from a promise of the bytes as from the bytes, warming up meanwhile, on every engine bundle of $url", async ({ url, corpus }) => {
    const page = await openPage("/", ["empty"]);
    await page.addScriptTag({ url: "/test-page/worker.js", type: "module" });
    await page.waitForFunction(() => "dpedgeWorker" in globalThis);
    const cases = corpus.cases.accept.filter((c) => c.engine === "onnx" && !c.load);
    const refuse = corpus.cases.refuse.filter((c) => c.pack === undefined).slice(0, 6);
    const got = await page.evaluate(async ({ base, cases, refuse }) => {
      const w = (globalThis as unknown as { dpedgeWorker: Runtime }).dpedgeWorker;
      const get = (file: string): Promise<ArrayBuffer> => fetch(base + file).then((r) => r.arrayBuffer());
      const out: string[] = [];
      /** Everything a load gives but its times: the facts, and each text's result. */
      const answers = async (clf: Runtime, texts: string[]): Promise<string> => JSON.stringify([clf.labels, clf.engineName,
        clf.maxLength, clf.checkCosine, clf.info(),
        (await clf.classify(texts, { topK: 3 })).map((r: Runtime) => ({ ...r, ms: 0 }))]);
      for (const c of cases) {
        const texts = (c.queries ?? []).map((q) => q.text);
        const pack = c.pack === undefined ? undefined : new Uint8Array(await get(c.pack));
        const given = await w.WorkerClassifier.load(new Uint8Array(await get(c.file)), { threads: 1, encoderPack: pack });
        const promised = await w.WorkerClassifier.load(get(c.file), { threads: 1, encoderPack: pack });
        if (given.warmUp !== null) out.push(`${c.file}: a warm-up with the bytes given`);
        if (promised.warmUp?.ok !== true) out.push(`${c.file}: the warm-up did not run: ${JSON.stringify(promised.warmUp)}`);
        const [a, b] = [await answers(given, texts), await answers(promised, texts)];
        if (a !== b) out.push(`${c.file}: ${b.slice(0, 300)} != ${a.slice(0, 300)}`);
        given.terminate();
        promised.terminate();
      }
      for (const c of refuse) {
        try {
          (await w.WorkerClassifier.load(get(c.file))).terminate();
          out.push(`${c.file}: accepted`);
        } catch (e) {
          const { name, code, path } = e as { name: string; code: string; path: string };
          if (name !== "BundleError" || code !== c.code || path !== c.path) out.push(`${c.file}: ${name} ${code} at ${path}, want ${c.code} at ${c.path}`);
        }
      }
      // A download that fails: load rejects with its error, at once or while the worker warms up.
      const failure = new Error("the download failed");
      for (const promise of [Promise.reject(failure), new Promise((_, no) => setTimeout(() => no(failure), 300))]) {
        const why = await w.WorkerClassifier.load(promise).then(() => "loaded", (e: unknown) => e);
        if (why !== failure) out.push(`a rejected promise: ${String(why)}`);
      }
      const wrong = await w.WorkerClassifier.load(fetch(base + cases[0]!.file)).then(() => "loaded", (e: Error) => `${e.name}: ${e.message}`);
      if (!/^TypeError: .*neither a Uint8Array nor an ArrayBuffer/.test(wrong)) out.push(`a promise of a Response: ${wrong}`);
      const controller = new AbortController();
      const aborted = w.WorkerClassifier.load(new Promise(() => {}), { signal: controller.signal }).then(() => "loaded", (e: Error) => e.name);
      controller.abort();
      if (await aborted !== "AbortError") out.push(`aborted while downloading: ${await aborted}`);
      return out;
    }, { base: url, cases, refuse });
    expect(got).toEqual([]);
    await page.close();
  });

  it(`keeps the page responsive during a ${BATCH}-text batch and streams its results`, async () => {
    const texts = batchTexts();
    const page = await openPage(`/?bundle=${heavy.url.slice(1)}accept/default.dpedge`);
    expect(await page.evaluate(() => document.body.dataset["state"])).toBe("ready");
    await page.fill("#texts", texts.join("\n"));
    // The probe: a 10 ms timer chain on the page's main thread records its longest wait and the progress it sees.
    await page.evaluate(() => {
      const probe = { worst: 0, at: "", seen: [] as number[], on: true };
      let last = performance.now();
      const tick = (): void => {
        const now = performance.now();
        if (now - last > probe.worst) probe.at = `${document.body.dataset["state"]} ${document.body.dataset["done"] ?? 0}`;
        probe.worst = Math.max(probe.worst, now - last);
        last = now;
        probe.seen.push(Number(document.body.dataset["done"] ?? 0));
        if (probe.on) setTimeout(tick, 10);
      };
      setTimeout(tick, 10);
      (globalThis as unknown as { probe: typeof probe }).probe = probe;
    });
    const t0 = Date.now();
    await page.click("#classify");
    await page.waitForFunction(() => Number(document.body.dataset["done"] ?? 0) >= 3, undefined, { timeout: 60_000 });
    // While the batch runs: a click on another control, and its effect. Measured in the page, from the click's
    // input event (its timeStamp: when the browser received it) to the first frame after the panel opened, and from
    // the test's side (Playwright's round trips included).
    expect(await page.evaluate(() => (document.getElementById("auditor") as HTMLDetailsElement).open)).toBe(false);
    await page.evaluate(() => {
      const w = globalThis as unknown as { clickMs?: number; keyMs?: number };
      const details = document.getElementById("auditor")!;
      let clicked = 0;
      details.querySelector("summary")!.addEventListener("click", (e) => { clicked = e.timeStamp; }, { once: true });
      details.addEventListener("toggle", () => requestAnimationFrame(() => { w.clickMs = performance.now() - clicked; }), { once: true });
      const box = document.getElementById("filter")!;
      box.addEventListener("keydown", (e) => {
        const pressed = e.timeStamp;
        box.addEventListener("input", () => requestAnimationFrame(() => { w.keyMs = performance.now() - pressed; }), { once: true });
      }, { once: true });
    });
    const c0 = Date.now();
    await page.click("#auditor summary");
    await page.waitForFunction(() => (document.getElementById("auditor") as HTMLDetailsElement).open, undefined, { timeout: 10_000 });
    const clickTestMs = Date.now() - c0;
    const doneAtClick = Number(await page.evaluate(() => document.body.dataset["done"]));
    // And typing in a field (the results' filter): the text appears, and the list is filtered.
    await page.locator("#filter").focus();
    await page.keyboard.type("z");
    await page.waitForFunction(() => "keyMs" in globalThis && "clickMs" in globalThis, undefined, { timeout: 10_000 });
    const { clickMs, keyMs } = await page.evaluate(() => {
      const w = globalThis as unknown as { clickMs: number; keyMs: number };
      return { clickMs: w.clickMs, keyMs: w.keyMs };
    });
    await page.waitForFunction(() => document.body.dataset["state"] === "answered", undefined, { timeout: 300_000 });
    const batchMs = Date.now() - t0;
    const probe = await page.evaluate(async (total) => {
      await new Promise((done) => setTimeout(done, 30));
      const p = (globalThis as unknown as { probe: { worst: number; at: string; seen: number[]; on: boolean } }).probe;
      p.on = false;
      return { worst: p.worst, at: p.at, seen: [...new Set(p.seen)].filter((n) => n > 0 && n < total).length };
    }, BATCH);
    expect(await page.$$eval("#rows > .row:not([hidden])", (trs) => trs.length)).toBeLessThan(BATCH); // "z" hides rows
    await page.fill("#filter", "");
    expect(await page.$$eval("#rows > .row:not([hidden])", (trs) => trs.length)).toBe(BATCH);
    const rows = await page.$$eval("#rows > .row", (trs) => trs.length);
    console.log(`${BATCH}-text batch on ${heavy.corpus.name}: ${batchMs} ms; a click took effect in ${clickMs.toFixed(0)} ms ` +
      `(${clickTestMs} ms from the test's side; at ${doneAtClick}/${BATCH} done), a key in ${keyMs.toFixed(0)} ms; the page's longest wait ${probe.worst.toFixed(0)} ms (${probe.at}); ` +
      `${probe.seen} progress values seen before the end`);
    expect(rows).toBe(BATCH);
    expect(doneAtClick).toBeLessThan(BATCH); // the batch was still running when the click took effect
    expect(clickMs).toBeLessThan(CLICK_MS);
    expect(keyMs).toBeLessThan(CLICK_MS);
    expect(probe.worst).toBeLessThan(BLOCK_MS);
    expect(probe.seen).toBeGreaterThan(10); // results streamed
    expect(batchMs).toBeGreaterThan(2 * BLOCK_MS); // the batch lasted long enough for the bound to mean something

    // The control: the same probe around the in-thread Classifier sees the batch as one block.
    await page.addScriptTag({ url: "/test-page/runtime.js", type: "module" });
    await page.waitForFunction(() => "dpedgeRuntime" in globalThis);
    const control = await page.evaluate(async ({ file, texts }) => {
      const m = (globalThis as unknown as { dpedgeRuntime: Runtime }).dpedgeRuntime;
      const clf = await m.Classifier.load(new Uint8Array(await (await fetch(file)).arrayBuffer()), { engine: m.webEngine({ threads: 1 }) });
      let worst = 0;
      let last = performance.now();
      let on = true;
      const tick = (): void => {
        const now = performance.now();
        worst = Math.max(worst, now - last);
        last = now;
        if (on) setTimeout(tick, 10);
      };
      setTimeout(tick, 10);
      await new Promise((done) => setTimeout(done, 50));
      const t0 = performance.now();
      for (const t of texts) await clf.classify([t]);
      const total = performance.now() - t0;
      await new Promise((done) => setTimeout(done, 30));
      on = false;
      await clf.close();
      return { worst, total };
    }, { file: `${heavy.url}accept/default.dpedge`, texts: texts.slice(0, 20) });
    console.log(`the in-thread Classifier on 20 of these texts: ${control.total.toFixed(0)} ms, the page's longest wait ` +
      `${control.worst.toFixed(0)} ms`);
    expect(control.worst).toBeGreaterThan(0.9 * control.total);
    await page.close();
  });

  it("cancels a batch, keeping the results so far", async () => {
    const page = await openPage(`/?bundle=${heavy.url.slice(1)}accept/default.dpedge`);
    await page.fill("#texts", batchTexts().join("\n"));
    await page.click("#classify");
    await page.waitForFunction(() => Number(document.body.dataset["done"] ?? 0) >= 2, undefined, { timeout: 60_000 });
    await page.click("#cancel");
    await page.waitForFunction(() => document.body.dataset["state"] === "cancelled", undefined, { timeout: 10_000 });
    const rows = await page.$$eval("#rows > .row", (trs) => trs.length);
    expect(rows).toBeGreaterThanOrEqual(2);
    expect(rows).toBeLessThan(BATCH);
    expect(await page.textContent("#summary-text")).toMatch(new RegExp(`^Cancelled after ${rows} of ${BATCH} texts: ${rows} classified, 0 skipped`));
    expect(await page.isEnabled("#classify")).toBe(true);
    await page.close();
  });

  it("says why an empty or unreadable text is not classified, notes truncation, sums up and downloads a batch", async () => {
    const file = "accept/default.dpedge";
    const maxLength = (await readBundle(committed.corpus.read(file))).encoder.maxLength;
    const page = await openPage(`/?bundle=${committed.url.slice(1)}${file}`);
    // The privacy facts in plain words first, the auditor's table folded beneath.
    const plain = await page.textContent("#plain");
    expect(plain).toContain("Epsilon = ");
    expect(plain).toContain("by a factor of at most e^");
    expect(plain).toContain("Delta = 0: the bound always holds (pure differential privacy).");
    expect(plain).toContain("They are not probabilities");
    expect(await page.isVisible("#privacy-details")).toBe(false);
    expect(await page.textContent("#limit")).toContain(`Only the first ${maxLength} tokens of a text are read`);

    const nothing = "Nothing to classify: this text is empty or has nothing readable (only spaces, control or invisible characters).";
    await page.fill("#texts", "");
    await page.click("#classify");
    await page.waitForFunction(() => document.body.dataset["state"] === "answered");
    expect(await page.isVisible("#message")).toBe(true);
    expect(await page.textContent("#message")).toBe(nothing);

    const long = Array.from({ length: 400 }, (_, i) => `word${i % 7}`).join(" ");
    const texts = ["\u200b\u200b", "\u0007\u0008", "   ", "wake me up at six", long];
    await page.fill("#texts", texts.join("\n"));
    await page.click("#classify");
    await page.waitForFunction(() => document.body.dataset["state"] === "answered");
    const rows = await page.$$eval("#rows > .row", (trs) => trs.map((tr) => ({ ...(tr as HTMLElement).dataset,
      why: tr.querySelector(".why")?.textContent ?? null, text: tr.querySelector(".text")?.textContent ?? "" })));
    expect(rows.map((r) => r.code ?? null)).toEqual(["query.empty", "query.empty", "query.empty", null, null]);
    expect(rows.slice(0, 3).map((r) => r.why)).toEqual([nothing, nothing, nothing]);
    expect(rows[0]!.text).toContain("\\u200b"); // an invisible text is shown escaped, not as nothing
    expect(rows[4]!.truncated).toBe("true");
    expect(rows[4]!.text).toContain(`... (${long.length.toLocaleString("en")} characters in all)`);
    expect(rows[4]!.text).toContain(`Truncated: only its first ${maxLength} tokens were read.`);
    expect(rows[3]!.truncated).toBeUndefined();
    expect(await page.textContent("#summary-text")).toMatch(/^5 texts: 2 classified, 3 skipped \(3 with nothing readable\), 1 truncated at \d+ tokens; /);
    const counted = await page.$$eval("#summary-labels li", (lis) => lis.reduce((n, li) => n + Number((li as HTMLElement).dataset["count"]), 0));
    expect(counted).toBe(2);
    const download = async (id: string): Promise<string> => {
      const [d] = await Promise.all([page.waitForEvent("download"), page.click(`#${id}`)]);
      return readFileSync((await d.path())!, "utf-8");
    };
    const downloads = { csv: await download("csv"), json: JSON.parse(await download("json")) };
    expect(downloads.csv.trim().split("\r\n")).toHaveLength(1 + texts.length);
    expect(downloads.csv.split("\r\n")[0]).toMatch(/^index,text,label,score,truncated,tokens,error_code,error,score_/);
    expect(downloads.json.results.map((r: { text: string }) => r.text)).toEqual(texts);
    expect(downloads.json.results[4].truncated).toBe(true);
    expect(downloads.json.max_length).toBe(maxLength);

    // A file of texts: JSON Lines with a "text" field (a text's own line break becomes a space), put into the box.
    await page.setInputFiles("#batch-file", { name: "texts.jsonl", mimeType: "application/x-ndjson",
      buffer: Buffer.from(['{"text": "wake me up"}', '{"text": "two\\nlines", "label": "x"}', ""].join("\n")) });
    await page.waitForFunction(() => (document.getElementById("texts") as HTMLTextAreaElement).value.startsWith("wake me up"));
    expect(await page.inputValue("#texts")).toBe("wake me up\ntwo lines");
    expect(await page.textContent("#progress-text")).toBe("2 texts from texts.jsonl: press Classify.");
    await page.close();
  });

  it("had no console error, no failed request (no favicon 404), and no request outside the page's origin", () => {
    expect(consoleErrors).toEqual([]);
    expect(failed).toEqual([]);
    expect(requests.filter((u) => /favicon/.test(u))).toEqual([]);
    const outside = requests.filter((u) => !u.startsWith(origin + "/") && !u.startsWith("data:") && !u.startsWith("blob:"));
    expect(outside).toEqual([]);
    // Chromium's own traffic went to the refusing proxy of scripts/chromium.mjs (nothing left the machine); the
    // pages' requests did not go through it.
    const own = browser.contacted();
    console.log(`Chromium itself tried (refused by the local proxy): ${[...new Set(own)].join(", ") || "nothing"}`);
    expect(own.filter((r) => r.includes("127.0.0.1"))).toEqual([]);
    // The worker's own requests are seen too: the demo page's thread never loads onnxruntime-web, its worker does.
    expect(requests.some((u) => u.endsWith("/vendor/worker-script.js"))).toBe(true);
    expect(requests.some((u) => u.endsWith(".wasm"))).toBe(true);
  });
});
