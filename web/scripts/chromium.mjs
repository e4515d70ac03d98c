/**
 * Debian's Chromium driven by playwright-core (no browser download), with the flags that keep it
 * off the network on its own (no background networking, component updates or sync) and a
 * fresh profile each run. Used by the browser tests and by bench/bench.mjs.
 */
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
 * A headless Chromium with an empty profile of its own.
 * @returns {Promise<{context: import("playwright-core").BrowserContext, close(): Promise<void>}>}
 */
export async function launch() {
  const profile = mkdtempSync(join(tmpdir(), "dpedge-chromium-"));
  // launchPersistentContext passes --user-data-dir=profile: a fresh, empty profile.
  const context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: FLAGS,
    viewport: { width: 900, height: 1100 } });
  return {
    context,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
