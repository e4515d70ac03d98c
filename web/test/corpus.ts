/**
 * The conformance corpora the tests run: format/1/corpus (committed: tiny encoders) and, when
 * DPEDGE_REAL_CORPUS names one, a corpus of the real encoder (`python format/tools/make_corpus.py
 * --real --out DIR`; `make test-web` writes build/real-corpus). With DPEDGE_WEB_REQUIRE set (CI),
 * a missing real corpus fails the run instead of being skipped.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export interface Query {
  text: string;
  token_ids?: number[];
  code?: string;
  embedding?: number[];
  scores?: number[];
  label?: string;
  margin?: number;
}

export interface AcceptCase {
  file: string;
  /** The encoder pack file read with the bundle (format 1.1; absent: none). */
  pack?: string;
  engine: "onnx" | "tflite" | null;
  labels: string[];
  check?: { token_ids: number[]; embedding: number[] };
  load?: { code: string; path: string };
  queries?: Query[];
  vectors?: { embedding: number[]; scores: number[]; label: string }[];
}

export interface Cases {
  tolerance: { scores: number; embedding: number; embedding_cosine: number; label_margin: number };
  accept: AcceptCase[];
  refuse: { file: string; code: string; path: string; pack?: string }[];
  /** Encoder pack files refused with code and path, read with expect (hex digests) when present (absent from a real corpus). */
  refuse_pack?: { file: string; code: string; path: string; expect?: string[] }[];
  text: { text: string; escaped: string; escaped_json: string; key: string; unprintable: number | null;
    unassigned: number | null; shows_something: boolean }[];
  /** Numbers as the contract writes them (section 5): 10 significant digits, ties to even (1.2). */
  numbers?: { value: number; text: string }[];
  /** Section 7.1's functions and the accountant's bound: args and the result's IEEE bits in hex (1.2). */
  arithmetic?: { function: string; args: number[]; bits: string }[];
}

export interface Corpus {
  name: string;
  dir: string;
  cases: Cases;
  read(file: string): Uint8Array;
}

export const REQUIRED = (process.env["DPEDGE_WEB_REQUIRE"] ?? "") !== "";
export const COMMITTED = fileURLToPath(new URL("../../format/1/corpus", import.meta.url));
const REAL = process.env["DPEDGE_REAL_CORPUS"] ?? "";

function open(name: string, dir: string): Corpus {
  const cases = JSON.parse(readFileSync(join(dir, "cases.json"), "utf-8")) as Cases;
  return { name, dir, cases, read: (file) => new Uint8Array(readFileSync(join(dir, file))) };
}

export const corpora: Corpus[] = [open("committed corpus", COMMITTED)];
if (REAL && existsSync(join(REAL, "cases.json"))) {
  corpora.push(open("real corpus", REAL));
} else if (REQUIRED) {
  throw new Error(`DPEDGE_WEB_REQUIRE is set but DPEDGE_REAL_CORPUS (${REAL || "unset"}) holds no cases.json: ` +
    "run `python format/tools/make_corpus.py --real --out DIR` and set DPEDGE_REAL_CORPUS=DIR");
} else {
  console.warn("dpedge web tests: the real encoder's corpus is skipped: set DPEDGE_REAL_CORPUS " +
    "(python format/tools/make_corpus.py --real --out build/real-corpus)");
}

export function cosine(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let [ab, aa, bb] = [0, 0, 0];
  for (let i = 0; i < a.length; i++) {
    ab += a[i]! * b[i]!;
    aa += a[i]! ** 2;
    bb += b[i]! ** 2;
  }
  return ab / Math.sqrt(aa * bb);
}
