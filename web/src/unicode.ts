/**
 * The contract's Unicode (format/1/unicode.json): character sets, decompositions, lowercase
 * and confusables of one pinned version, never the platform's (String.normalize, toLowerCase
 * and \p{...} follow the JavaScript engine's Unicode version). The algorithms are the standard
 * ones (canonical ordering, Hangul decomposition, UTS #39 prototypes); only the data is pinned.
 * Text is handled as arrays of code points; a lone surrogate is one code point, as in Python.
 */
import { UNICODE, type UnicodeTables } from "./contract.js";

/** A set of code points given as flat inclusive ranges [lo, hi, lo, hi, ...]. */
export class CharSet {
  private readonly r: Int32Array;

  constructor(flat: readonly number[]) {
    this.r = Int32Array.from(flat);
  }

  has(cp: number): boolean {
    const r = this.r;
    let lo = 0;
    let hi = r.length / 2 - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (cp < r[2 * mid]!) hi = mid - 1;
      else if (cp > r[2 * mid + 1]!) lo = mid + 1;
      else return true;
    }
    return false;
  }

  /** The first code point of `cps` in the set, or null. */
  first(cps: readonly number[]): number | null {
    for (const cp of cps) if (this.has(cp)) return cp;
    return null;
  }
}

const sets = new Map<string, CharSet>();

/** A set of unicode.json "sets" (control, whitespace, punctuation, nonspacing_mark, unassigned, ...). */
export function charset(name: keyof UnicodeTables["sets"]): CharSet {
  let s = sets.get(name);
  if (s === undefined) sets.set(name, (s = new CharSet(UNICODE.sets[name])));
  return s;
}

/** The code points of a string (a lone surrogate is one code point). */
export function codePoints(s: string): number[] {
  const out: number[] = [];
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        out.push(0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00));
        i++;
        continue;
      }
    }
    out.push(c);
  }
  return out;
}

/** The number of code points of a string (Python's len). */
export function cpLength(s: string): number {
  let n = s.length;
  for (let i = 0; i + 1 < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        n--;
        i++;
      }
    }
  }
  return n;
}

/** The UTF-16 index of the first lone surrogate of `s`, or -1. */
export function loneSurrogate(s: string): number {
  return s.search(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/);
}

export function fromCodePoints(cps: readonly number[]): string {
  let out = "";
  for (let i = 0; i < cps.length; i += 8192) out += String.fromCodePoint(...cps.slice(i, i + 8192));
  return out;
}

/** A table of unicode.json's [cp, n, c1..cn, ...] layout. */
function mapping(flat: readonly number[], into = new Map<number, number[]>()): Map<number, number[]> {
  for (let i = 0; i < flat.length; i += 2 + flat[i + 1]!) into.set(flat[i]!, flat.slice(i + 2, i + 2 + flat[i + 1]!));
  return into;
}

const cache: Record<string, Map<number, number[]>> = {};
function table(name: "canonical" | "compatibility" | "lowercase" | "confusable"): Map<number, number[]> {
  return (cache[name] ??= name === "canonical" ? mapping(UNICODE.decomposition)
    : name === "compatibility" ? mapping(UNICODE.compatibility, new Map(table("canonical")))
    : mapping(UNICODE[name]));
}

let combining: Map<number, number> | null = null;
function combiningClass(cp: number): number {
  if (combining === null) {
    combining = new Map();
    const flat = UNICODE.combining_class;
    for (let i = 0; i < flat.length; i += 3) for (let cp = flat[i]!; cp <= flat[i + 1]!; cp++) combining.set(cp, flat[i + 2]!);
  }
  return combining.get(cp) ?? 0;
}

/** Full decomposition by `map` (Hangul syllables by the algorithm), then canonical ordering. */
function decompose(cps: readonly number[], map: Map<number, number[]>): number[] {
  const out: number[] = [];
  for (const cp of cps) {
    const s = cp - 0xac00;
    if (cp < 0x80) out.push(cp);
    else if (s >= 0 && s < 11172) {
      out.push(0x1100 + Math.floor(s / 588), 0x1161 + Math.floor((s % 588) / 28));
      if (s % 28) out.push(0x11a7 + (s % 28));
    } else {
      const m = map.get(cp);
      if (m === undefined) out.push(cp);
      else out.push(...m);
    }
  }
  // Canonical ordering: each run of two or more non-starters sorted by combining class, stably.
  for (let i = 0; i < out.length; i++) {
    if (!combiningClass(out[i]!)) continue;
    let j = i + 1;
    while (j < out.length && combiningClass(out[j]!)) j++;
    if (j - i > 1) out.splice(i, j - i, ...out.slice(i, j).sort((a, b) => combiningClass(a) - combiningClass(b)));
    i = j;
  }
  return out;
}

/** Canonical decomposition (NFD) with the contract's tables. */
export function nfd(cps: readonly number[]): number[] {
  return decompose(cps, table("canonical"));
}

/** Compatibility decomposition (NFKD) with the contract's tables. */
export function nfkd(cps: readonly number[]): number[] {
  return decompose(cps, table("compatibility"));
}

function translate(cps: readonly number[], map: Map<number, number[]>): number[] {
  const out: number[] = [];
  for (const cp of cps) {
    const m = map.get(cp);
    if (m === undefined) out.push(cp);
    else out.push(...m);
  }
  return out;
}

/** Each code point's full lowercase mapping, with no context (a final sigma stays σ). */
export function lower(cps: readonly number[]): number[] {
  return translate(cps, table("lowercase"));
}

/** Each code point replaced by its UTS #39 prototype (itself when it has none). */
export function prototypes(cps: readonly number[]): number[] {
  return translate(cps, table("confusable"));
}
