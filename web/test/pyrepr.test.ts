/**
 * Numbers in messages are written as Python writes them (the golden phrases quote them):
 * repr and format(x, ".4g"), ".6g", ".10g" of 3,000 floats from Python (pyrepr.json), and the
 * reader's bound format.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { num, pyFloat, pyG, pyStr, show } from "../src/pyrepr.js";
import { fixture, HAVE_FIXTURES, SKIP_MESSAGE } from "./fixtures.js";

describe("Python's way of writing values", () => {
  it("writes the reader's bounds and reprs", () => {
    expect([num(1e-6), num(1e6), num(2147483647n), num(18446744073709551615n), num(2147483647 / 1e-6), num(null)])
      .toEqual(["1e-06", "1000000", "2147483647", "1.84467e+19", "2.14748e+15", "any"]);
    expect([pyFloat(5e-7), pyFloat(2e6), pyFloat(-1), pyFloat(NaN), pyFloat(-Infinity)]).toEqual(["5e-07", "2000000.0", "-1.0", "nan", "-inf"]);
    expect(pyStr("it's")).toBe('"it\'s"');
    expect(show("x".repeat(100))).toBe(`'${"x".repeat(27)}...${"x".repeat(28)}'`);
    expect(show([1n, 2n, 3n, 4n, 5n, 6n, 7n])).toBe("[1, 2, 3, 4, 5, 6, ...]");
  });
});

describe.skipIf(!HAVE_FIXTURES)(`floats as Python writes them (${HAVE_FIXTURES ? "fixtures found" : SKIP_MESSAGE})`, () => {
  it("matches repr and .4g, .6g, .10g on 3,000 floats", () => {
    const cases = JSON.parse(readFileSync(fixture("pyrepr.json"), "utf-8")) as { x: number; repr: string; g4: string; g6: string; g10: string }[];
    const wrong = cases.filter((c) => pyFloat(c.x) !== c.repr || pyG(c.x, 4) !== c.g4 || pyG(c.x, 6) !== c.g6 || pyG(c.x, 10) !== c.g10)
      .map((c) => `${c.repr}: ${pyFloat(c.x)} ${pyG(c.x, 4)} ${pyG(c.x, 6)} ${pyG(c.x, 10)} (want ${c.g4} ${c.g6} ${c.g10})`);
    expect(wrong.slice(0, 5)).toEqual([]);
    expect(cases.length).toBeGreaterThan(2900);
  });
});
