/**
 * The package as another app gets it: `npm pack` of web/, installed offline from the tarball
 * (and the npm cache) into a copy of examples/browser-app, whose builds (esbuild, Vite and
 * webpack 5, each with its default handling of the package) and type checks (strict,
 * skipLibCheck false, moduleResolution bundler and node16) must pass; then each built page,
 * served as a static site, classifies a text of the committed corpus's default bundle in
 * headless Chromium with the corpus's label, on the page and in dpedge/worker's Web Worker
 * (Vite and webpack bundle that worker themselves; esbuild's build makes it an entry). Also:
 *
 * - a program importing both entry points type-checks with the same strict settings, no DOM and
 *   no @types/node, and the declarations import no package (no engine's types are needed);
 *
 * - the tarball holds dist/ (no source maps), README.md, LICENSE and package.json only;
 * - installed without onnxruntime-node, `import "dpedge"` works (readBundle) and loading a
 *   classifier is a DeploymentError naming onnxruntime-node;
 * - without ort-wasm-simd-threaded.wasm beside the script, or with an HTML page in its place,
 *   the page fails with engine.deployment naming the file's URL (not a refusal of the bundle);
 *   with the load option wasmPaths naming another folder, it classifies;
 * - a worker script that cannot be loaded, or one copied unbundled (its import of onnxruntime-web
 *   left to a browser, as a bundler that copies `new Worker(new URL(...))` as a file leaves it), is
 *   an engine.deployment error of the worker naming the fix, not "install onnxruntime-web".
 */
import { execFileSync, spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import type { Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CHROMIUM, HAVE_CHROMIUM, launch } from "../scripts/chromium.mjs";
import { startServer } from "../scripts/serve.mjs";
import { corpora, REQUIRED } from "./corpus.js";

const WEB = fileURLToPath(new URL("..", import.meta.url));
const EXAMPLE = join(WEB, "examples", "browser-app");
const committed = corpora[0]!;
const { version } = JSON.parse(readFileSync(join(WEB, "package.json"), "utf-8")) as { version: string };
const NPM = process.platform === "win32" ? "npm.cmd" : "npm";

/** Runs a command; its output is shown only when it fails. */
function run(cmd: string, args: string[], cwd: string, env: Record<string, string> = {}): string {
  const r = spawnSync(cmd, args, { cwd, encoding: "utf-8", env: { ...process.env, ...env }, maxBuffer: 1 << 26 });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(" ")} (in ${cwd}) failed:\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

/**
 * `npm <args>` offline, from the npm cache; where the cache lacks something (a package web/'s own
 * `npm ci` did not put there, or a package's registry metadata, which an install without a lock
 * file reads), again with --prefer-offline, which fetches only what is missing.
 */
function installOffline(args: string[], cwd: string, env: Record<string, string> = {}): void {
  try {
    run(NPM, [...args, "--offline", "--no-audit", "--no-fund"], cwd, env);
  } catch (e) {
    if (!String(e).includes("ENOTCACHED")) throw e;
    console.warn(`npm ${args[0]} --offline: the npm cache lacks something; again with --prefer-offline`);
    run(NPM, [...args, "--prefer-offline", "--no-audit", "--no-fund"], cwd, env);
  }
}

describe("the packed package in an app", () => {
  let root = "";
  let app = "";
  let files: string[] = [];

  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), "dpedge-package-"));
    const t0 = Date.now();
    // --ignore-scripts off: prepack builds dist/ as a publish would.
    const out = run(NPM, ["pack", "--json", "--pack-destination", root], WEB);
    const packed = JSON.parse(out.slice(out.search(/^\[/m))) as { filename: string; files: { path: string }[] }[];
    files = packed[0]!.files.map((f) => f.path).sort();
    // The example names the tarball as web/'s `npm pack` writes it, two folders up.
    app = join(root, "examples", "browser-app");
    cpSync(EXAMPLE, app, { recursive: true, filter: (src) => !/[/\\](node_modules|dist)$/.test(src) });
    expect(packed[0]!.filename).toBe(`dpedge-${version}.tgz`);
    installOffline(["ci"], app);
    console.log(`packed and installed offline in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  }, 180_000);

  afterAll(() => {
    if (root) rmSync(root, { recursive: true, force: true });
  });

  it("ships dist/ without source maps, README.md, LICENSE and package.json", () => {
    expect(files.filter((f) => !f.startsWith("dist/"))).toEqual(["LICENSE", "README.md", "package.json"]);
    expect(files).toContain("dist/index.js");
    expect(files).toContain("dist/browser.js");
    expect(files).toContain("dist/browser.d.ts");
    expect(files.filter((f) => f.endsWith(".map"))).toEqual([]);
    expect(readFileSync(join(app, "node_modules", "dpedge", "LICENSE"), "utf-8")).toContain("Apache License\n                           Version 2.0, January 2004");
  });

  it("builds with esbuild, Vite and webpack 5 and type-checks strictly (bundler and node16 resolution, skipLibCheck false)", () => {
    run(NPM, ["run", "-s", "build"], app);
    run(NPM, ["run", "-s", "typecheck"], app);
  }, 180_000);

  it("type-checks a program that imports both entry points (no DOM, no @types/node); the declarations import no package", () => {
    const dts = files.filter((f) => f.endsWith(".d.ts"));
    const imports = dts.flatMap((f) => [...readFileSync(join(app, "node_modules", "dpedge", f), "utf-8")
      .replace(/\/\*[\s\S]*?\*\//g, "").matchAll(/(?:from|import)\s*\(?\s*"([^"]+)"/g)].map((m) => m[1]!));
    expect(imports.filter((i) => !i.startsWith("./") && !i.startsWith("../"))).toEqual([]);
    writeFileSync(join(app, "both.ts"), `
      import { Classifier, nodeEngine, readBundle, DeploymentError, type Prediction } from "dpedge";
      import { Classifier as WebClassifier, webEngine, type BrowserLoadOptions } from "dpedge/browser";
      export async function both(bytes: Uint8Array): Promise<string[]> {
        const clf = await Classifier.load(bytes, { engine: nodeEngine({ inProcess: true }) });
        const options: BrowserLoadOptions = { wasmPaths: { wasm: "/ort/ort-wasm-simd-threaded.wasm" } };
        const web = await WebClassifier.load(bytes, { ...options, engine: webEngine({ threads: 1 }) });
        const p: Prediction[] = await clf.classify(["a text"], { topK: 2 });
        return [...(await readBundle(bytes)).labels, p[0]!.label, web.engineName, String(new DeploymentError("x").code)];
      }`);
    const options = { strict: true, skipLibCheck: false, exactOptionalPropertyTypes: true, noUncheckedIndexedAccess: true,
      target: "ES2022", lib: ["ES2022"], types: [], noEmit: true };
    for (const [module, moduleResolution] of [["ESNext", "Bundler"], ["Node16", "Node16"]]) {
      writeFileSync(join(app, "tsconfig.both.json"), JSON.stringify({ compilerOptions: { ...options, module, moduleResolution }, files: ["both.ts"] }));
      run(join(app, "node_modules", ".bin", "tsc"), ["-p", "tsconfig.both.json"], app);
    }
  });

  it("type-checks a page that imports dpedge/worker strictly (the Web Worker classifier; DOM types)", () => {
    expect(files).toEqual(expect.arrayContaining(["dist/worker.js", "dist/worker-script.js", "dist/worker.d.ts"]));
    writeFileSync(join(app, "worker.ts"), `
      import { WorkerClassifier } from "dpedge/worker";
      export async function viaWorker(bytes: Uint8Array, signal: AbortSignal): Promise<string[]> {
        const clf = await WorkerClassifier.load(bytes, { worker: new URL("./worker-script.js", import.meta.url) });
        const labels: string[] = [];
        await clf.classify(["a text"], { topK: 1, signal, onResult: (r) => { if (r.prediction) labels.push(r.prediction.label); } });
        clf.terminate();
        return labels;
      }`);
    const options = { strict: true, skipLibCheck: false, exactOptionalPropertyTypes: true, noUncheckedIndexedAccess: true,
      target: "ES2022", lib: ["ES2022", "DOM"], types: [], noEmit: true };
    for (const [module, moduleResolution] of [["ESNext", "Bundler"], ["Node16", "Node16"]]) {
      writeFileSync(join(app, "tsconfig.worker.json"), JSON.stringify({ compilerOptions: { ...options, module, moduleResolution }, files: ["worker.ts"] }));
      run(join(app, "node_modules", ".bin", "tsc"), ["-p", "tsconfig.worker.json"], app);
    }
  });

  it("imports dpedge in Node without onnxruntime-node, and names the package when an engine is needed", () => {
    const script = `
      import { readFileSync } from "node:fs";
      import { Classifier, readBundle } from "dpedge";
      const bytes = readFileSync(${JSON.stringify(join(committed.dir, "accept", "default.dpedge"))});
      const labels = (await readBundle(bytes)).labels;
      let error = null;
      try { await Classifier.load(bytes); } catch (e) { error = { name: e.name, code: e.code, message: e.message }; }
      console.log(JSON.stringify({ labels, error }));`;
    writeFileSync(join(app, "node-check.mjs"), script);
    const out = JSON.parse(execFileSync(process.execPath, ["node-check.mjs"], { cwd: app, encoding: "utf-8" })) as
      { labels: string[]; error: { name: string; code: string; message: string } };
    expect(out.labels.length).toBeGreaterThan(1);
    expect(out.error).toMatchObject({ name: "DeploymentError", code: "engine.deployment" });
    expect(out.error.message).toContain("npm install onnxruntime-node@1.30.0");
  });

  it("classifies a corpus text with the corpus's label in a Node app that installs the tarball with onnxruntime-node", () => {
    // As web/README.md says for Node, into an empty app, offline from the npm cache.
    const nodeApp = join(root, "node-app");
    mkdirSync(nodeApp);
    writeFileSync(join(nodeApp, "package.json"), JSON.stringify({ name: "node-app", private: true, type: "module" }));
    installOffline(["install", join(root, `dpedge-${version}.tgz`), "onnxruntime-node@1.30.0"], nodeApp, { ONNXRUNTIME_NODE_INSTALL: "skip" });
    const c = committed.cases.accept.find((x) => x.file === "accept/default.dpedge")!;
    const q = c.queries!.find((x) => !x.code && x.margin! > committed.cases.tolerance.label_margin)!;
    writeFileSync(join(nodeApp, "classify.mjs"), `
      import { readFileSync } from "node:fs";
      import { Classifier } from "dpedge";
      const clf = await Classifier.load(readFileSync(${JSON.stringify(join(committed.dir, "accept", "default.dpedge"))}));
      const [p] = await clf.classify([${JSON.stringify(q.text)}]);
      await clf.close();
      console.log(JSON.stringify(p.label));`);
    expect(JSON.parse(execFileSync(process.execPath, ["classify.mjs"], { cwd: nodeApp, encoding: "utf-8" }))).toBe(q.label);
  }, 120_000);

  describe.skipIf(!HAVE_CHROMIUM)("the built page in headless Chromium", () => {
    let server: Server;
    let browser: Awaited<ReturnType<typeof launch>>;
    let origin = "";
    const c = committed.cases.accept.find((x) => x.file === "accept/default.dpedge")!;
    const q = c.queries!.find((x) => !x.code && x.margin! > committed.cases.tolerance.label_margin && /^[\x20-\x7e]+$/.test(x.text))!;

    beforeAll(async () => {
      if (!existsSync(join(app, "dist", "webpack", "index.html"))) run(NPM, ["run", "-s", "build"], app);
      const dist = join(app, "dist");
      const esbuilt = join(dist, "esbuild");
      const bare = join(root, "bare");
      cpSync(esbuilt, bare, { recursive: true, filter: (src) => !src.endsWith(".wasm") });
      // A server that answers every path with the app's page (a single-page app's fallback).
      const html = join(root, "html");
      cpSync(bare, html, { recursive: true });
      writeFileSync(join(html, "ort-wasm-simd-threaded.wasm"), "<!doctype html><title>app</title>");
      // The worker's script missing, and the package's worker script copied as a file, unbundled.
      const noWorker = join(root, "no-worker");
      cpSync(esbuilt, noWorker, { recursive: true, filter: (src) => !src.endsWith("worker-script.js") });
      const unbundled = join(root, "unbundled");
      cpSync(esbuilt, unbundled, { recursive: true });
      // (with the chunks it imports: its own modules load, its import of onnxruntime-web cannot)
      const packaged = join(app, "node_modules", "dpedge", "dist");
      cpSync(join(packaged, "worker-script.js"), join(unbundled, "worker-script.js"));
      cpSync(join(packaged, "chunks"), join(unbundled, "chunks"), { recursive: true });
      server = await startServer({ "/esbuild/": esbuilt, "/vite/": join(dist, "vite"), "/webpack/": join(dist, "webpack"),
        "/bare/": bare, "/html/": html, "/no-worker/": noWorker, "/unbundled/": unbundled, "/corpus/": committed.dir,
        "/ort/": join(app, "node_modules", "onnxruntime-web", "dist") });
      const address = server.address();
      origin = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
      browser = await launch();
    });

    afterAll(async () => {
      await browser?.close();
      await new Promise((done) => server?.close(done));
    });

    async function open(path: string): Promise<{ state: string; label: string; error: string; code: string }> {
      const page = await browser.context.newPage();
      page.on("pageerror", (e) => console.error("page error:", e.message));
      await page.goto(`${origin}${path}`);
      await page.waitForFunction(() => ["ready", "failed"].includes(document.body.dataset["state"] ?? ""), undefined, { timeout: 60_000 });
      if (await page.evaluate(() => document.body.dataset["state"]) === "ready") {
        await page.fill("#text", q.text);
        await page.click("#classify");
        await page.waitForFunction(() => ["answered", "failed"].includes(document.body.dataset["state"] ?? ""), undefined, { timeout: 60_000 });
      }
      const out = await page.evaluate(() => ({
        state: document.body.dataset["state"] ?? "", label: document.getElementById("label")!.textContent ?? "",
        error: document.getElementById("error")!.textContent ?? "", code: document.getElementById("error")!.dataset["code"] ?? "",
      }));
      await page.close();
      return out;
    }

    for (const bundler of ["esbuild", "vite", "webpack"]) {
      it(`classifies a corpus text with the corpus's label, built by ${bundler}, on the page and in a Web Worker`, async () => {
        for (const where of ["", "worker&"]) {
          expect(await open(`/${bundler}/?${where}bundle=/corpus/accept/default.dpedge`)).toMatchObject({ state: "answered", label: q.label, error: "" });
        }
      });
    }

    it("reports a worker script that cannot be loaded as a deployment error of the worker, naming it and the fix", async () => {
      const got = await open("/no-worker/?worker&bundle=/corpus/accept/default.dpedge");
      expect(got).toMatchObject({ state: "failed", code: "engine.deployment" });
      expect(got.error).toContain(`the classifier's Web Worker did not start`);
      expect(got.error).toContain(`its script ${origin}/no-worker/worker-script.js`);
      expect(got.error).toContain(`build "dpedge/worker-script" as an entry of its own`);
    });

    it("reports a worker script copied unbundled as a deployment problem of the worker, not as a missing package", async () => {
      const got = await open("/unbundled/?worker&bundle=/corpus/accept/default.dpedge");
      expect(got).toMatchObject({ state: "failed", code: "engine.deployment" });
      expect(got.error).toContain(`in the Web Worker ${origin}/unbundled/worker-script.js: a deployment problem of the worker, not a missing package`);
      expect(got.error).toContain("onnxruntime-web/wasm");
      expect(got.error).not.toContain("npm install");
    });

    it("reports a missing WebAssembly file as a deployment error naming it, not as a refused bundle", async () => {
      const got = await open("/bare/?bundle=/corpus/accept/default.dpedge");
      expect(got).toMatchObject({ state: "failed", code: "engine.deployment" });
      expect(got.error).toMatch(/^deployment: /);
      expect(got.error).toContain(`${origin}/bare/ort-wasm-simd-threaded.wasm (HTTP 404)`);
      expect(got.error).toContain("wasmPaths");
    });

    it("reports a WebAssembly file that is not WebAssembly as a deployment error naming it", async () => {
      const got = await open("/html/?bundle=/corpus/accept/default.dpedge");
      expect(got).toMatchObject({ state: "failed", code: "engine.deployment" });
      expect(got.error).toContain(`${origin}/html/ort-wasm-simd-threaded.wasm is not WebAssembly`);
    });

    it("finds the WebAssembly files where the load option wasmPaths says", async () => {
      expect(await open("/bare/?bundle=/corpus/accept/default.dpedge&wasmPaths=/ort/")).toMatchObject({ state: "answered", label: q.label });
    });
  });
});

if (!HAVE_CHROMIUM) {
  const why = `no Chromium at ${CHROMIUM} (apt-get install -y chromium, or set DPEDGE_CHROMIUM)`;
  if (REQUIRED) throw new Error(`DPEDGE_WEB_REQUIRE is set but there is ${why}`);
  console.warn(`dpedge package test: skipping the page in Chromium: ${why}`);
}
