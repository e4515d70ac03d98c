/**
 * The generated modules are what web/scripts/gen_schema.py writes now from the Python
 * reference: a change to runtime/bundle/schema.py, runtime/text.py or the tokenizers library
 * that is not regenerated fails here.
 */
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const PYTHON = process.env["DPEDGE_PYTHON"] ?? `${ROOT}.venv/bin/python`;
const HAVE_PYTHON = existsSync(PYTHON);
if (!HAVE_PYTHON && process.env["DPEDGE_WEB_REQUIRE"]) throw new Error(`DPEDGE_WEB_REQUIRE is set but there is no Python at ${PYTHON}`);
if (!HAVE_PYTHON) console.warn(`dpedge web tests: skipping the generated-module check: no Python at ${PYTHON} (set DPEDGE_PYTHON)`);

describe.skipIf(!HAVE_PYTHON)("generated modules", () => {
  it("are what web/scripts/gen_schema.py writes now", () => {
    const r = spawnSync(PYTHON, ["web/scripts/gen_schema.py", "--check"], { cwd: ROOT, encoding: "utf-8", timeout: 120_000 });
    expect(r.stderr + r.stdout).toBe("");
    expect(r.status).toBe(0);
  });
});
