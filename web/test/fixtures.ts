/**
 * Where the tests find what the Python side made: web/scripts/fixtures.py --out DIR builds real
 * bundles with the exporter, the golden folder android_demo/golden.py writes (token ids,
 * embeddings, buckets, scores and labels of the Python runtime; 490 malformed bundles with the
 * phrases their errors must contain; valid variants; the text tables), the Python tokenizer's
 * ids for every Unicode code point, Python's repr of random floats and the Python CLI's answers
 * for the quick start's texts. Tests that need them are skipped, saying so, when
 * DPEDGE_WEB_FIXTURES does not name that folder.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { decode } from "@msgpack/msgpack";

export const FIXTURES = process.env["DPEDGE_WEB_FIXTURES"] ?? "";
export const HAVE_FIXTURES = FIXTURES !== "" && existsSync(join(FIXTURES, "golden", "golden.msgpack"));
export const SKIP_MESSAGE =
  "needs DPEDGE_WEB_FIXTURES: run `.venv/bin/python web/scripts/fixtures.py --out DIR` and set DPEDGE_WEB_FIXTURES=DIR";

/** Set by CI: a missing fixture folder or browser fails the run instead of skipping tests. */
export const REQUIRED = (process.env["DPEDGE_WEB_REQUIRE"] ?? "") !== "";

if (!HAVE_FIXTURES && REQUIRED) {
  throw new Error(`DPEDGE_WEB_REQUIRE is set but the tests' fixtures are missing: ${SKIP_MESSAGE}`);
}
if (!HAVE_FIXTURES) {
  console.warn(`dpedge web tests: skipping the tests that ${SKIP_MESSAGE}` +
    (FIXTURES ? ` (${FIXTURES}/golden/golden.msgpack is missing)` : ""));
}

export function fixture(...parts: string[]): string {
  return join(FIXTURES, ...parts);
}

export function readFixture(...parts: string[]): Uint8Array {
  return new Uint8Array(readFileSync(fixture(...parts)));
}

/** One golden case: the Python runtime's answer for one text, stage by stage. */
export interface GoldenCase {
  text: string;
  token_ids: number[];
  embedding: Uint8Array;
  buckets: number[] | null;
  scores: number[];
  label: string;
}

export interface Golden {
  bundles: { file: string; cases: GoldenCase[] }[];
  scored: { file: string; plain_votes: boolean; prior_boost: number; cases: Omit<GoldenCase, "text" | "token_ids">[] }[];
  malformed: { file: string; phrases: string[] }[];
  variants: { file: string }[];
  schema: { fields: unknown[][]; dims: Record<string, unknown[]>; conditions: Record<string, string> };
  text: { unprintable: number[][]; invisible: number[][]; cases: { text: string; escaped: string; folded: string; unprintable: number }[] };
}

let cached: Golden | null = null;

export function golden(): Golden {
  cached ??= decode(readFixture("golden", "golden.msgpack")) as Golden;
  return cached;
}

/** A golden embedding (little-endian float32 bytes) as a Float32Array. */
export function f32(bytes: Uint8Array): Float32Array {
  return new Float32Array(new Uint8Array(bytes).buffer);
}
