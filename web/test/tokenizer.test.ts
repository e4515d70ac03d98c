/**
 * The tokenizer against the Python runtime's (the Rust `tokenizers` library) on every Unicode
 * code point: for the bundle's tokenizer.json and three other BertNormalizer settings, texts
 * that put each code point inside a word and alone (web/scripts/fixtures.py, probe.msgpack),
 * plus added tokens, Greek sigmas, dotted capitals, combining sequences and over-long words.
 * It also shows why two components are written by hand: @huggingface/tokenizers alone gives
 * other ids for tens of thousands of these code points.
 */
import { decode } from "@msgpack/msgpack";
import { Tokenizer } from "@huggingface/tokenizers";
import { describe, expect, it } from "vitest";
import { TextTokenizer } from "../src/tokenizer.js";
import { checkTokenizerJson } from "../src/tokenizer_family.js";
import { HAVE_FIXTURES, readFixture, SKIP_MESSAGE } from "./fixtures.js";

interface Probe {
  tokenizer_json: string;
  texts: string[];
  ids: number[][];
}

function probes(): Record<string, Probe> {
  return decode(readFixture("probe.msgpack")) as Record<string, Probe>;
}

/** The first code point whose two texts' ids differ, for a readable failure. */
function describeMismatch(text: string, got: number[], want: number[]): string {
  const words = text.split(" ");
  return `${JSON.stringify(words.slice(0, 2).join(" ")).slice(0, 40)}...: got ${got.length} ids, want ${want.length} ` +
    `(first difference at id ${got.findIndex((v, i) => v !== want[i])})`;
}

describe.skipIf(!HAVE_FIXTURES)(`tokenizer parity with Python on every code point (${HAVE_FIXTURES ? "fixtures found" : SKIP_MESSAGE})`, () => {
  it.each(["bundle", "cased", "accents-stripped-cased", "raw"])("gives Python's ids with the %s normalizer settings", (name) => {
    const p = probes()[name]!;
    // A max_length no probe text reaches: the probe is about the pipeline, truncation has golden cases.
    const tok = new TextTokenizer(p.tokenizer_json, checkTokenizerJson(p.tokenizer_json), 1 << 30);
    const mismatches: string[] = [];
    p.texts.forEach((text, i) => {
      const got = tok.encode(text);
      if (got.join(",") !== p.ids[i]!.join(",")) mismatches.push(describeMismatch(text, got, p.ids[i]!));
    });
    expect(mismatches.slice(0, 5)).toEqual([]);
    expect(p.texts.length).toBeGreaterThan(name === "bundle" ? 2700 : 150);
  });

  it("needs its hand-written normalizer and pre-tokenizer: the library alone differs from Python", () => {
    const p = probes()["bundle"]!;
    const lib = new Tokenizer(JSON.parse(p.tokenizer_json), {});
    let differing = 0;
    p.texts.forEach((text, i) => {
      if (lib.encode(text).ids.join(",") !== p.ids[i]!.join(",")) differing++;
    });
    // Measured: 173 of the 2,789 probe texts (53,827 code points: CJK outside the BMP, a final
    // sigma, marks and punctuation newer than the Rust crate's Unicode tables).
    expect(differing).toBeGreaterThan(100);
  });
});
