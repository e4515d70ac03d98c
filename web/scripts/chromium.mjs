/**
 * Debian's Chromium driven by playwright-core (no browser download), with the flags that keep it
 * off the network on its own (no background networking, component updates or sync) and a
 * fresh profile each run. Used by the browser tests and by the benches.
 *
 * The flags do not stop everything: measured with Chromium 1xx, a 30-second demo session still
 * tried accounts.google.com, content-autofill.googleapis.com, android.clients.google.com,
 * www.google.com, clients2.google.com (network time) and optimizationguide-pa.googleapis.com.
 * So Chromium's own traffic goes to a local proxy that refuses every request and records its
 * host (`contacted()`): nothing leaves the machine. The pages' own requests to 127.0.0.1 do not
 * go through it (Chromium never proxies loopback), and the tests watch those separately.
 */
import { createServer } from "node:http";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

/** The browser: DPEDGE_CHROMIUM, else Debian's package (`apt-get install -y chromium`). */
export const CHROMIUM = process.env["DPEDGE_CHROMIUM"] ?? "/usr/bin/chromium";
export const HAVE_CHROMIUM = existsSync(CHROMIUM);

export const FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
  "--disable-background-networking", "--disable-component-update", "--disable-sync"];

/**
 * A proxy on 127.0.0.1 that refuses every request (403, or a refused CONNECT) and records what was asked.
 * @returns {Promise<{server: import("node:http").Server, seen: string[]}>}
 */
async function refusingProxy() {
  const seen = [];
  const server = createServer((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    res.writeHead(403).end();
  });
  server.on("connect", (req, socket) => {
    seen.push(`CONNECT ${req.url}`);
    socket.end("HTTP/1.1 403 Forbidden\r\n\r\n");
  });
  await new Promise((done) => server.listen(0, "127.0.0.1", done));
  return { server, seen };
}

/**
 * A headless Chromium with an empty profile of its own, its own traffic sent to a refusing proxy.
 * @returns {Promise<{context: import("playwright-core").BrowserContext, contacted(): string[], close(): Promise<void>}>}
 */
export async function launch() {
  const profile = mkdtempSync(join(tmpdir(), "dpedge-chromium-"));
  const proxy = await refusingProxy();
  // launchPersistentContext passes --user-data-dir=profile: a fresh, empty profile.
  const context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true,
    args: [...FLAGS, `--proxy-server=http://127.0.0.1:${proxy.server.address().port}`], viewport: { width: 900, height: 1100 } });
  return {
    context,
    /** What Chromium itself asked for outside this machine so far (refused), e.g. "CONNECT accounts.google.com:443". */
    contacted: () => [...proxy.seen],
    async close() {
      await context.close();
      proxy.server.closeAllConnections();
      await new Promise((done) => proxy.server.close(done));
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
