/**
 * A static file server for the demo page and the tests: files only, no server logic. It sends
 * the two headers that make the page cross-origin isolated (so onnxruntime-web may use several
 * WebAssembly threads) and nothing else a page would need.
 *
 *     node scripts/serve.mjs [--port 8080] [--bundles DIR]     # then open http://127.0.0.1:8080/
 *
 * "/" is web/demo; "/bundles/" is DIR (default: ../models), so that
 * http://127.0.0.1:8080/?bundle=bundles/quickstart.dpedge opens the quick-start bundle.
 */
import { createReadStream, existsSync, statSync } from "node:fs";
import { createServer } from "node:http";
import { extname, join, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";

const WEB = fileURLToPath(new URL("..", import.meta.url));
const TYPES = {
  ".html": "text/html; charset=utf-8", ".js": "text/javascript", ".mjs": "text/javascript", ".css": "text/css",
  ".wasm": "application/wasm", ".json": "application/json", ".png": "image/png", ".dpedge": "application/octet-stream",
};

/**
 * Serve `mounts` ({ "/": folder, "/bundles/": folder }) on 127.0.0.1; resolves to the server.
 * A path outside its folder, a folder, or a missing file is a 404.
 */
export function startServer(mounts, port = 0) {
  const roots = Object.entries(mounts).sort((a, b) => b[0].length - a[0].length);
  const server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url ?? "/", "http://x").pathname);
    const mount = roots.find(([prefix]) => path.startsWith(prefix));
    let file = null;
    if (mount && (req.method === "GET" || req.method === "HEAD")) {
      const root = resolve(mount[1]);
      const rest = path.slice(mount[0].length) || "index.html";
      const candidate = resolve(join(root, rest));
      if (candidate.startsWith(root + sep)) {
        try {
          if (statSync(candidate).isFile()) file = candidate;
        } catch {
          file = null;
        }
      }
    }
    if (file === null) {
      res.writeHead(404, { "Content-Type": "text/plain" }).end("not found");
      return;
    }
    res.writeHead(200, {
      "Content-Type": TYPES[extname(file)] ?? "application/octet-stream",
      "Content-Length": statSync(file).size,
      "Cross-Origin-Opener-Policy": "same-origin",
      "Cross-Origin-Embedder-Policy": "require-corp",
      "Cache-Control": "no-store",
    });
    if (req.method === "HEAD") res.end();
    else createReadStream(file).pipe(res);
  });
  return new Promise((done) => server.listen(port, "127.0.0.1", () => done(server)));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  // The page runs the runtime in a Web Worker: build its two files beside build.mjs's (npm run demo runs build.mjs first).
  const { buildWorker } = await import("./build_worker.mjs");
  await buildWorker();
  const arg = (name, fallback) => {
    const i = process.argv.indexOf(name);
    return i > 0 ? process.argv[i + 1] : fallback;
  };
  const bundles = resolve(arg("--bundles", join(WEB, "..", "models")));
  const server = await startServer({ "/": join(WEB, "demo"), "/bundles/": bundles }, Number(arg("--port", "8080")));
  const page = `http://127.0.0.1:${server.address().port}/`;
  console.log(`dpedge demo on ${page} (bundles from ${bundles} at /bundles/)`);
  // The URL that opens a first bundle at once, or how to get one.
  if (existsSync(join(bundles, "quickstart.dpedge"))) console.log(`open the quick-start bundle: ${page}?bundle=bundles/quickstart.dpedge`);
  else console.log(`no quickstart.dpedge in ${bundles}: \`make quickstart\` in the repository writes it (or open any .dpedge file on the page)`);
}
