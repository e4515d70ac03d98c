/**
 * The text rules (runtime/text.py) and the format's table against the Python module's answers
 * (golden.msgpack's text and schema sections), and properties of escape and fold on any string.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CONDITIONS, DIMS, FIELDS, INVISIBLE, UNPRINTABLE } from "../src/generated/schema.js";
import { escape, fold, inRanges, unprintable } from "../src/text.js";
import { golden, HAVE_FIXTURES, SKIP_MESSAGE } from "./fixtures.js";

const pairs = (flat: readonly number[]): number[][] => flat.flatMap((x, i) => (i % 2 ? [] : [[x, flat[i + 1]!]]));
const num = (x: number | bigint | null): number | null => (x === null ? null : Number(x));

describe("escape, fold and unprintable on any string", () => {
  it("escape leaves nothing unprintable and keeps printable text as it is", () => {
    fc.assert(fc.property(fc.string({ unit: "binary" }), (s) => {
      const e = escape(s);
      expect(unprintable(e)).toBeNull();
      if (unprintable(s) === null) expect(e).toBe(s);
    }), { numRuns: 2000 });
  });

  it("fold is idempotent and removes every invisible code point", () => {
    fc.assert(fc.property(fc.string({ unit: "binary" }), (s) => {
      const f = fold(s);
      expect(fold(f)).toBe(f);
      for (const ch of f) expect(inRanges(INVISIBLE, ch.codePointAt(0)!)).toBe(false);
    }), { numRuns: 2000 });
  });

  it("escapes a terminal escape and a bidi override the way Python does", () => {
    expect(escape("ok\x1b[2J\u202e")).toBe("ok\\x1b[2J\\u202e");
    expect(escape("a\tb\u2066c\u{e0041}")).toBe("a\\tb\\u2066c\\U000e0041");
    expect(fold("Ｂｉｌｌｉｎｇ\u200b")).toBe(fold("Billing"));
  });
});

describe.skipIf(!HAVE_FIXTURES)(`the Python module's tables and answers (${HAVE_FIXTURES ? "fixtures found" : SKIP_MESSAGE})`, () => {
  it("holds runtime/text.py's tables", () => {
    expect(pairs(UNPRINTABLE)).toEqual(golden().text.unprintable);
    expect(pairs(INVISIBLE)).toEqual(golden().text.invisible);
  });

  it("escapes and folds the tricky texts as Python does", () => {
    for (const c of golden().text.cases) {
      expect(escape(c.text), JSON.stringify(c.text)).toBe(c.escaped);
      expect(fold(c.text), JSON.stringify(c.text)).toBe(c.folded);
      expect(unprintable(c.text) ?? -1, JSON.stringify(c.text)).toBe(c.unprintable);
    }
    expect(golden().text.cases.length).toBeGreaterThan(30);
  });

  it("holds the format's table row for row (golden.py's schema rows)", () => {
    const rows = FIELDS.map((f) => [f.path, f.kind, f.need, num(f.low), num(f.high), f.dtype, [...f.shape], [...f.choices], f.text, f.open]);
    const want = golden().schema.fields.map((r) => r.map((v, i) => (i === 3 || i === 4) && v !== null ? Number(v) : v));
    expect(rows).toEqual(want);
    expect(Object.fromEntries(Object.entries(DIMS).map(([k, d]) => [k, [d.doc, d.low, d.high]]))).toEqual(golden().schema.dims);
    expect(CONDITIONS).toEqual(golden().schema.conditions);
  });
});
