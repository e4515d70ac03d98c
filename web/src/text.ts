/**
 * Text from a bundle or an engine, made safe in one place, and the label rules (schema.json
 * "text", unicode.json):
 *
 * - `escape` is what every text from a bundle, an engine or a query passes where it leaves the
 *   runtime (error messages, info(), the demo page): each unprintable code point becomes a
 *   visible escape (\t, \x1b, \u202e, \U000e0041); `escapeJson` does the same inside JSON text;
 * - printable text holds no unprintable code point; labels and descriptions hold no code point
 *   unassigned in the contract's Unicode version and show something (`showsSomething`);
 * - no two labels have the same `labelKey`: compatibility decomposition, default-ignorable
 *   code points removed, UTS #39 prototypes.
 */
import { SCHEMA } from "./contract.js";
import { CharSet, charset, codePoints, fromCodePoints, nfkd, prototypes } from "./unicode.js";

const UNPRINTABLE = new CharSet(SCHEMA.text.unprintable);

/** The first unprintable code point of `text`, or null. */
export function unprintable(text: string): number | null {
  return UNPRINTABLE.first(codePoints(text));
}

/** The first code point of `text` that the contract's Unicode version does not assign, or null. */
export function unassigned(text: string): number | null {
  return charset("unassigned").first(codePoints(text));
}

/** Whether `text` holds a code point outside the blank set (text of blanks alone prints as nothing). */
export function showsSomething(text: string): boolean {
  const blank = charset("blank");
  return codePoints(text).some((cp) => !blank.has(cp));
}

const hex = (cp: number, digits: number): string => cp.toString(16).padStart(digits, "0");

function replaceUnprintable(text: string, write: (cp: number) => string): string {
  let out = "";
  for (const cp of codePoints(text)) out += UNPRINTABLE.has(cp) ? write(cp) : String.fromCodePoint(cp);
  return out;
}

/** `text` with every unprintable code point shown as \t, \n, \r, \xNN, \uNNNN or \UNNNNNNNN. */
export function escape(text: string): string {
  const named: Record<number, string> = { 9: "\\t", 10: "\\n", 13: "\\r" };
  return replaceUnprintable(text, (cp) => named[cp] ??
    (cp < 0x100 ? `\\x${hex(cp, 2)}` : cp < 0x10000 ? `\\u${hex(cp, 4)}` : `\\U${hex(cp, 8)}`));
}

/**
 * A JSON text (a JSON encoder's output) with every unprintable code point from U+007F on written
 * as a JSON escape: the same value, safe to show. Below U+007F the encoder has escaped them
 * inside strings already, and outside strings they are its own white space.
 */
export function escapeJson(json: string): string {
  return replaceUnprintable(json, (cp) => cp < 0x7f ? String.fromCodePoint(cp) : cp < 0x10000 ? `\\u${hex(cp, 4)}`
    : `\\u${hex(0xd800 + ((cp - 0x10000) >> 10), 4)}\\u${hex(0xdc00 + ((cp - 0x10000) & 0x3ff), 4)}`);
}

function foldCps(cps: readonly number[]): number[] {
  const ignorable = charset("default_ignorable");
  return nfkd(nfkd(cps).filter((cp) => !ignorable.has(cp)));
}

/** What a text reads as: NFKD, default-ignorable code points removed, NFKD again. */
export function fold(text: string): string {
  return fromCodePoints(foldCps(codePoints(text)));
}

/** What a label looks like, for comparing labels: fold, UTS #39 prototypes, fold. */
export function labelKey(text: string): string {
  return fromCodePoints(foldCps(prototypes(foldCps(codePoints(text)))));
}

/** A code point as U+XXXX, the way messages name it. */
export function uPlus(cp: number): string {
  return "U+" + [...cp.toString(16).padStart(4, "0")].map((d) => "0123456789ABCDEF"[parseInt(d, 16)]).join("");
}
