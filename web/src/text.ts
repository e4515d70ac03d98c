/**
 * Text from a bundle or an engine, made safe in one place (runtime/text.py).
 *
 * `escape` is what every text from a bundle passes before it is shown: each code point of the
 * UNPRINTABLE table becomes a visible escape (\x1b, \u202e, \U000e0041), so a label cannot act
 * on a terminal, reorder a line or hide text. `fold` is how labels are compared: NFKC, the
 * INVISIBLE code points removed, NFKC again. The tables are generated from the Python module
 * (src/generated/schema.ts), never copied by hand.
 */
import { INVISIBLE, UNPRINTABLE } from "./generated/schema.js";
import { PY_WHITESPACE } from "./generated/unicode.js";

/** Whether code point `cp` lies in one of the sorted inclusive ranges [lo0, hi0, lo1, hi1, ...]. */
export function inRanges(table: readonly number[], cp: number): boolean {
  let lo = 0;
  let hi = table.length / 2 - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    if (cp < table[2 * mid]!) hi = mid - 1;
    else if (cp > table[2 * mid + 1]!) lo = mid + 1;
    else return true;
  }
  return false;
}

/** The code points of `s` (a lone surrogate is one code point, as in Python). */
export function codePoints(s: string): number[] {
  const out: number[] = [];
  for (const ch of s) out.push(ch.codePointAt(0)!);
  return out;
}

/** Python's len(): code points, not UTF-16 units. */
export function pyLen(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) i++;
    }
    n++;
  }
  return n;
}

/** The first code point of the UNPRINTABLE table in `text`, or null. */
export function unprintable(text: string): number | null {
  for (const ch of text) {
    const cp = ch.codePointAt(0)!;
    if (inRanges(UNPRINTABLE, cp)) return cp;
  }
  return null;
}

/** One code point as Python's unicode_escape codec writes it (\t, \x1b, \u202e, \U000e0041). */
export function pyEscape(cp: number): string {
  if (cp === 0x09) return "\\t";
  if (cp === 0x0a) return "\\n";
  if (cp === 0x0d) return "\\r";
  if (cp < 0x100) return "\\x" + cp.toString(16).padStart(2, "0");
  if (cp < 0x10000) return "\\u" + cp.toString(16).padStart(4, "0");
  return "\\U" + cp.toString(16).padStart(8, "0");
}

/** `text` with every UNPRINTABLE code point shown as its Python escape. */
export function escape(text: string): string {
  let out = "";
  for (const ch of text) {
    const cp = ch.codePointAt(0)!;
    out += inRanges(UNPRINTABLE, cp) ? pyEscape(cp) : ch;
  }
  return out;
}

/** What a label looks like, for comparing labels: NFKC, invisible code points removed, NFKC again. */
export function fold(text: string): string {
  let kept = "";
  for (const ch of text.normalize("NFKC")) {
    if (!inRanges(INVISIBLE, ch.codePointAt(0)!)) kept += ch;
  }
  return kept.normalize("NFKC");
}

/** Python's str.strip(): whitespace as str.isspace sees it (not JavaScript's trim, which differs). */
export function pyStrip(text: string): string {
  const chars = Array.from(text);
  let a = 0;
  let b = chars.length;
  while (a < b && inRanges(PY_WHITESPACE, chars[a]!.codePointAt(0)!)) a++;
  while (b > a && inRanges(PY_WHITESPACE, chars[b - 1]!.codePointAt(0)!)) b--;
  return chars.slice(a, b).join("");
}

/** A code point as U+XXXX, the way error messages name it. */
export function uPlus(cp: number): string {
  return "U+" + cp.toString(16).toUpperCase().padStart(4, "0");
}
