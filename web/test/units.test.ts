/**
 * Unit tests that add what the corpus does not: properties of escape, fold and the tokenizer on
 * any string, the strict JSON rules case by case (answers of the Python reference's parser,
 * runtime/bundle/tokenizer_family.py, recorded below), the privacy summary (the Python
 * reference's, recorded), the head's accountant (runtime/bundle/accounting.py's answers,
 * recorded), and the rule that no platform Unicode function decides anything in
 * the reader, tokenizer or text rules.
 */
import { readdirSync, readFileSync } from "node:fs";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { headEpsilon, logMoment } from "../src/accounting.js";
import { DELTA_STATEMENT, DELTA_SUMMARY, SCHEMA } from "../src/contract.js";
import { bundleInfo, privacySummary, short } from "../src/describe.js";
import { BundleError } from "../src/errors.js";
import { exp, expm1, log, log1p } from "../src/exactmath.js";
import { readBundle } from "../src/reader.js";
import { escape, escapeJson, fold, unprintable } from "../src/text.js";
import { TextTokenizer } from "../src/tokenizer.js";
import { parseStrict } from "../src/tokenizer_family.js";
import { charset, codePoints } from "../src/unicode.js";
import { corpora } from "./corpus.js";

/** [JSON text, null (accepted) or the code Python's parser refuses it with]. */
const STRICT_JSON: [string, string | null][] = [
  ["{\"a\": 1}", null],
  ["[1, 2.0, -0.0, 1e400, -1e400]", null],
  ["{\"a\": -0}", "tokenizer.json"],
  ["-0", "tokenizer.json"],
  ["0", null],
  ["9007199254740991", null],
  ["9007199254740992", "tokenizer.json"],
  ["-9007199254740991", null],
  ["-9007199254740992", "tokenizer.json"],
  ["\"\\ud83d\\ude00\"", null],
  ["\"\\ud83d\"", "tokenizer.json"],
  ["\"\\ude00\\ud83d\"", "tokenizer.json"],
  ["\"\\u00e9\\/\\b\\f\\n\\r\\t\\\"\\\\\"", null],
  ["\"\\x41\"", "tokenizer.json"],
  ["\"\\u12\"", "tokenizer.json"],
  ["\"a\tb\"", "tokenizer.json"],
  ["\"\u007f\u2028\"", null],
  ["\u00a0{}", "tokenizer.json"],
  ["{}\u00a0", "tokenizer.json"],
  ["\ufeff{}", "tokenizer.json"],
  [" \t\n\r{} \r\n", null],
  ["{\"a\":1,\"a\":2}", "tokenizer.json"],
  ["{\"a\":{\"b\":1},\"c\":{\"b\":2}}", null],
  ["NaN", "tokenizer.json"],
  ["Infinity", "tokenizer.json"],
  ["-Infinity", "tokenizer.json"],
  ["nan", "tokenizer.json"],
  ["null", null],
  ["true", null],
  ["nul", "tokenizer.json"],
  ["01", "tokenizer.json"],
  ["1.", "tokenizer.json"],
  [".5", "tokenizer.json"],
  ["1.5e", "tokenizer.json"],
  ["1e+5", null],
  ["1E-5", null],
  ["+1", "tokenizer.json"],
  ["[1,]", "tokenizer.json"],
  ["{\"a\":1,}", "tokenizer.json"],
  ["[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]", null],
  ["[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]", "tokenizer.json"],
  ["{\"a\":{\"a\":{\"a\":{\"a\":{\"a\":{\"a\":{\"a\":{\"a\":{\"a\":{\"a\":{\"a\":{\"a\":{\"a\":{\"a\":{\"a\":{\"a\":1}}}}}}}}}}}}}}}}", null],
  ["{\"a\":{\"a\":{\"a\":{\"a\":{\"a\":{\"a\":{\"a\":{\"a\":{\"a\":{\"a\":{\"a\":{\"a\":{\"a\":{\"a\":{\"a\":{\"a\":{\"a\":1}}}}}}}}}}}}}}}}}", "tokenizer.json"],
  ["", "tokenizer.json"],
  [" ", "tokenizer.json"],
  ["{} {}", "tokenizer.json"],
  ["{}x", "tokenizer.json"],
  ["{\"\\ud800x\": 1}", "tokenizer.json"],
  ["1111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111", "tokenizer.json"],
  ["\"\u00e9\u00e9\u00e9\u00e9\u00e9\"", null],
  ["[1 2]", "tokenizer.json"],
  ["{\"a\" 1}", "tokenizer.json"],
  ["{1: 2}", "tokenizer.json"],
  ["{'a': 1}", "tokenizer.json"],
  ["\"\\u0000\"", null],
  ["\"\\uD83D\\uDE00\"", null]
];

describe("escape and fold on any string", () => {
  it("escape leaves nothing unprintable, keeps printable text as it is, and is idempotent", () => {
    fc.assert(fc.property(fc.string({ unit: "binary" }), (s) => {
      const e = escape(s);
      expect(unprintable(e)).toBeNull();
      expect(escape(e)).toBe(e);
      if (unprintable(s) === null) expect(e).toBe(s);
      expect(JSON.parse(escapeJson(JSON.stringify(s)))).toBe(s);
    }), { numRuns: 2000 });
  });

  it("escapeJson leaves a JSON encoder's own white space and escapes the rest", () => {
    expect(escapeJson(JSON.stringify({ label: "a\u202eb\x85\t" }, null, 2))).toBe('{\n  "label": "a\\u202eb\\u0085\\t"\n}');
  });

  it("fold is idempotent and leaves no default-ignorable code point", () => {
    const ignorable = charset("default_ignorable");
    fc.assert(fc.property(fc.string({ unit: "binary" }), (s) => {
      const f = fold(s);
      expect(fold(f)).toBe(f);
      expect(codePoints(f).some((cp) => ignorable.has(cp))).toBe(false);
    }), { numRuns: 2000 });
  });
});

describe("the tokenizer on any string", () => {
  // BERT's TemplateProcessing ([CLS] ... [SEP]) and MPNet's RobertaProcessing with a normalized added token (<s> ... </s>, 1.2).
  it.each(["accept/default.dpedge", "accept/mpnet.dpedge"])("gives ids of the vocabulary between its two special tokens, at most max_length of them (%s)", async (file) => {
    const b = await readBundle(corpora[0]!.read(file));
    const vocab = b.encoder.tokenizer.get("model") as Map<string, unknown>;
    const size = (vocab.get("vocab") as Map<string, number>).size;
    const tok = new TextTokenizer(b.encoder.tokenizer, b.encoder.maxLength);
    const [first, last] = [tok.encode("")[0], tok.encode("")[1]];
    fc.assert(fc.property(fc.string({ unit: "binary", maxLength: 200 }), (s) => {
      const ids = tok.encode(s);
      expect(ids.length).toBeLessThanOrEqual(b.encoder.maxLength);
      expect([ids[0], ids[ids.length - 1]]).toEqual([first, last]);
      expect(ids.every((i) => Number.isInteger(i) && i >= 0 && i < size)).toBe(true);
      expect(tok.hasToken(s)).toBe(ids.length > 2);
    }), { numRuns: 2000 });
  });
});

describe("the privacy summary", () => {
  // The Python reference's answers (runtime/describe.py privacy_summary), recorded: the corpus holds no summaries.
  it("names B only when the statistics are a sum of batches' releases", async () => {
    const summary = async (file: string): Promise<string> => privacySummary(await readBundle(corpora[0]!.read(file)));
    expect(await summary("accept/default.dpedge")).toBe("epsilon = 8, delta = 0 (pure DP) per one record, spent on " +
      "class_counts eps 0.4 (scale 2.5), class_sums eps 7.6 (scale 18.02631579); discrete Laplace noise");
    expect(await summary("accept/scoring/three-batches.dpedge")).toBe("epsilon = 8, delta = 0 (pure DP) per one record, " +
      "spent on class_counts eps 0.4 (scale 2.5), class_sums eps 6.8 (scale 20.14705882), votes eps 0.8 (scale 2.5) " +
      "in each of 3 disjoint batches, summed; discrete Laplace noise");
  });
});

describe("the privacy summary of a bundle with a head (1.1)", () => {
  // runtime/describe.py privacy_summary on the same file, recorded; what delta is in the contract's
  // words (schema.json "wording" "delta", read here from the file), never "a probability that the bound fails".
  it("states delta in the contract's words and never says pure", async () => {
    const wording = (JSON.parse(readFileSync(new URL("../../format/1/schema.json", import.meta.url), "utf8")) as
      { wording: { delta: { summary: string; statement: string } } }).wording.delta;
    expect(DELTA_SUMMARY).toBe(wording.summary);
    expect(DELTA_STATEMENT).toBe(wording.statement);
    const b = await readBundle(corpora[0]!.read("accept/scoring/head.dpedge"));
    const s = privacySummary(b);
    expect(s).toBe(`epsilon = 4.4, delta = 1e-05 (${wording.summary}) per one record, spent on class_counts eps 0.4 ` +
      "(scale 2.5), head eps 4 delta 1e-05 (DP-SGD, 400 steps, sample rate 0.25, noise multiplier 5.893434); discrete " +
      "Laplace and Gaussian noise");
    expect(s).not.toMatch(/may fail|pure DP/);
    expect(b.delta).toBe(1e-5);
    const info = bundleInfo(b) as { components: string[]; releases: Record<string, Record<string, unknown>>; sizes_bytes: Record<string, number> };
    expect(info.components).toEqual(["head"]);
    expect(info.releases["head"]).toMatchObject({ epsilon: 4, delta: 1e-5, sensitivity_l2: 524288, steps: 400, sample_rate: 0.25 });
    expect(info.releases["head"]).not.toHaveProperty("weights");
    expect(info.sizes_bytes["head"]).toBe(76);
  });

  it("names unit_count beside a person-level head (1.3) and exposes its value", async () => {
    // runtime/describe.py privacy_summary and bundle_info, and Bundle.unit_count, on the same file, recorded.
    const b = await readBundle(corpora[0]!.read("accept/scoring/head-three-records-per-person.dpedge"));
    expect(b.recordsPerUnit).toBe(3);
    expect(b.unitCount).toBe(57);
    expect(privacySummary(b)).toBe(`epsilon = 4.42, delta = 1e-05 (${DELTA_SUMMARY}) per one person, up to 3 records, ` +
      "spent on class_counts eps 0.4 (scale 7.5), unit_count eps 0.02 (scale 50), head eps 4 delta 1e-05 (DP-SGD, 400 " +
      "steps, sample rate 0.25, noise multiplier 5.893434); discrete Laplace and Gaussian noise");
    const info = bundleInfo(b) as { components: string[]; releases: Record<string, Record<string, unknown>> };
    expect(Object.keys(info.releases)).toEqual(["class_counts", "unit_count", "head"]);
    expect(info.releases["unit_count"]).toMatchObject({ epsilon: 0.02, sensitivity_l1: 1, noise_scale: 50 });
    expect(info.components).toEqual(["head"]);
    // A record-level head has no unit_count.
    expect((await readBundle(corpora[0]!.read("accept/scoring/head.dpedge"))).unitCount).toBeNull();
  });

  it("writes numbers as Python's .10g does", () => {
    // format(x, ".10g") in Python, recorded.
    const cases: [number, string][] = [[1e-5, "1e-05"], [1e-12, "1e-12"], [0.25, "0.25"], [18.026315789473685, "18.02631579"],
      [1e-4, "0.0001"], [0.00012345678901, "0.000123456789"], [1234567890, "1234567890"], [12345678901, "1.23456789e+10"],
      [9999999999.5, "1e+10"], [0.1 + 0.2, "0.3"], [-0, "-0"], [2147483647000000, "2.147483647e+15"], [3, "3"],
      // exact ties (the binary value's expansion stops at a 5 in the 11th digit) go to the even digit, not up; the extremes
      [2 ** -15, "3.051757812e-05"], [3 * 2 ** -15, "9.155273438e-05"], [12345678905, "1.23456789e+10"],
      [12345678915, "1.234567892e+10"], [-12345678925, "-1.234567892e+10"], [9999999998.5, "9999999998"],
      [5e-324, "4.940656458e-324"], [1.7976931348623157e308, "1.797693135e+308"], [0.00012207031250000001, "0.0001220703125"]];
    for (const [x, want] of cases) expect(short(x), String(x)).toBe(want);
  });
});

describe("the head's accountant (runtime/bundle/accounting.py)", () => {
  // head_epsilon(z, q, T, delta) and log_moment in Python, recorded (repr): with the contract's own
  // exp and log (section 7.1) every reader computes the same bits, so these are exact.
  const points: [number, number, number, number, number][] = [
    [1.1, 0.1, 1000, 1e-5, 22.89658105071257], [5.893434, 0.25, 400, 1e-5, 3.9999992826802746],
    [0.898761, 1.0, 20, 1e-12, 49.99996261740913], [0.01, 1e-9, 1, 1e-3, 9964.074929243969],
    [1e6, 1.0, 1000000, 1e-12, 0.08282525233160477], [0.5, 1.0, 1, 1e-5, 10.801691480042894],
    [2.0, 0.001, 3000, 1e-6, 0.19011501122140798], [0.3, 0.7, 7, 1e-9, 92.12140892508155],
    [100.0, 1e-4, 1, 1e-3, 0], [1.0, 0.5, 1000000, 1e-12, 357400.2642355434],
  ];
  it.each(points)("head_epsilon(%s, %s, %s, %s) = %s", (z, q, steps, delta, want) => {
    expect(headEpsilon(z, q, steps, delta)).toBe(want);
  });

  it("log_moment, sampled and with q = 1", () => {
    expect(logMoment(1.1, 0.1, 32)).toBe(336.2346323982433);
    expect(logMoment(0.898761, 1.0, 256)).toBe(40407.474963333145);
  });
});

describe("the contract's exp and log (section 7.1; runtime/bundle/exactmath.py)", () => {
  /** The distance in units in the last place between two finite doubles of the same sign. */
  const ulps = (a: number, b: number): number => {
    const v = new DataView(new ArrayBuffer(16));
    v.setFloat64(0, a);
    v.setFloat64(8, b);
    const d = v.getBigInt64(0) - v.getBigInt64(8);
    return Number(d < 0n ? -d : d);
  };

  it("gives section 7.1's special values", () => {
    const A = SCHEMA.arithmetic;
    expect(exp(NaN)).toBeNaN();
    expect(exp(Infinity)).toBe(Infinity);
    expect(exp(-Infinity)).toBe(0);
    expect(exp(A.exp_max)).toBeLessThan(Infinity);
    expect(exp(A.exp_max + 2 ** -42)).toBe(Infinity); // two doubles above 709
    expect(exp(A.exp_min)).toBeGreaterThan(2.2250738585072014e-308); // a normal number: p x 2^k is exact
    expect(exp(A.exp_min - 2 ** -43)).toBe(0); // the double below -708
    expect(exp(0)).toBe(1);
    expect(Object.is(exp(-0), 1)).toBe(true);
    for (const x of [NaN, -1, -Infinity, -5e-324]) expect(log(x)).toBeNaN();
    expect(log(0)).toBe(-Infinity);
    expect(log(-0)).toBe(-Infinity);
    expect(log(Infinity)).toBe(Infinity);
    expect(log(1)).toBe(0);
    expect(log1p(-1)).toBe(-Infinity);
    expect(log1p(-1.5)).toBeNaN();
    expect(log1p(NaN)).toBeNaN();
    expect(log1p(1e-300)).toBe(1e-300); // u = 1: y itself
    expect(Object.is(log1p(-0), -0)).toBe(true);
    expect(Object.is(expm1(-0), -0)).toBe(true);
    expect(expm1(NaN)).toBeNaN();
    expect(expm1(-Infinity)).toBe(-1);
    expect(expm1(Infinity)).toBe(Infinity);
  });

  it("reads subnormal numbers (times 2^54 first) and the extremes of the doubles", () => {
    // log(2^-1074) = -1074 ln 2, log of the largest double ~ 709.78: within a few ulps of the truth.
    expect(ulps(log(5e-324), -744.4400719213812)).toBeLessThanOrEqual(2);
    expect(ulps(log(2.2250738585072014e-308), -708.3964185322641)).toBeLessThanOrEqual(2);
    expect(ulps(log(2.225073858507201e-308), -708.3964185322641)).toBeLessThanOrEqual(2);
    expect(ulps(log(1.7976931348623157e308), 709.782712893384)).toBeLessThanOrEqual(2);
  });

  it("is within a few units in the last place of the platform's (which no decision uses)", () => {
    fc.assert(fc.property(fc.double({ min: -708, max: 709, noNaN: true }), (x) => ulps(exp(x), Math.exp(x)) <= 4),
      { numRuns: 5000 });
    fc.assert(fc.property(fc.double({ min: 5e-324, max: 1.7976931348623157e308, noNaN: true }),
      (x) => ulps(log(x), Math.log(x)) <= 4 || Math.abs(log(x) - Math.log(x)) <= 4e-16), { numRuns: 5000 });
    fc.assert(fc.property(fc.double({ min: -0.999, max: 1e6, noNaN: true }),
      (y) => ulps(log1p(y), Math.log1p(y)) <= 4 || Math.abs(log1p(y) - Math.log1p(y)) <= 4e-16), { numRuns: 5000 });
    fc.assert(fc.property(fc.double({ min: -700, max: 700, noNaN: true }),
      (x) => ulps(expm1(x), Math.expm1(x)) <= 4 || Math.abs(expm1(x) - Math.expm1(x)) <= 4e-16), { numRuns: 5000 });
  });

  it("has no Math.exp, log, log1p, expm1, pow or ** where src/ decides (exactmath, accounting, scoring, reader)", () => {
    const dir = new URL("../src/", import.meta.url);
    const code = (f: string): string => readFileSync(new URL(f, dir), "utf-8").replace(/\/\*[^]*?\*\/|\/\/.*/g, "");
    const used = ["exactmath.ts", "accounting.ts", "scoring.ts", "reader.ts"]
      .filter((f) => /Math\.(exp|expm1|log|log1p|log2|log10|pow|hypot|cbrt)\b|[^*]\*\*[^*]/.test(code(f).replace(/\b\d+n \*\*/g, "")));
    expect(used).toEqual([]);
  });
});

describe("strict JSON", () => {
  it.each(STRICT_JSON)("%j: %s", (text, code) => {
    let got: string | null = null;
    try {
      parseStrict(text);
    } catch (e) {
      got = (e as BundleError).code;
    }
    expect(got).toBe(code);
  });
});

describe("the contract's Unicode, not the platform's", () => {
  it("has no String.normalize, toLowerCase, toUpperCase, localeCompare or \\p{...} in src/", () => {
    const dir = new URL("../src/", import.meta.url);
    const files = readdirSync(dir, { recursive: true }).map(String).filter((f) => f.endsWith(".ts"));
    const code = (f: string): string => readFileSync(new URL(f, dir), "utf-8").replace(/\/\*[^]*?\*\/|\/\/.*/g, "");
    const used = files.filter((f) => /\.normalize\(\s*(["'`]NF|\))|\.to(Locale)?(Lower|Upper)Case\(|localeCompare|\\p\{/.test(code(f)));
    expect(files.length).toBeGreaterThan(10);
    expect(used).toEqual([]);
  });
});
