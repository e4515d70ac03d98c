/**
 * index.html names the app's source, src/main.ts, as Vite wants its entry page; esbuild and
 * webpack write a script instead, so their builds copy the page naming that script.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export function writePage(outDir, script) {
  const page = readFileSync(new URL("index.html", import.meta.url), "utf-8");
  if (!page.includes('src="./src/main.ts"')) throw new Error("index.html no longer names ./src/main.ts");
  writeFileSync(join(outDir, "index.html"), page.replace('src="./src/main.ts"', `src="./${script}"`));
}
