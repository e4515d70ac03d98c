/**
 * How the Python reference words values in its messages: repr of floats, strings, bytes and
 * lists, reprlib's shortened repr (runtime/bundle/reader.py's _show), format(x, ".Ng") and
 * json.dumps. The TypeScript reader's refusals carry the same key phrases as Python's (the
 * golden malformed bundles check them), so a number or a quoted name must read the same:
 * "is 5e-07, expected 1e-06 to 1000000", "operator 'Loop'".
 */
import { escape, inRanges } from "./text.js";
import { PY_NONPRINTABLE } from "./generated/unicode.js";

/** A value of a decoded bundle or tokenizer.json: Python's types in JavaScript clothes. */
export type Value = null | boolean | bigint | number | string | Uint8Array | Value[] | ValueMap;
/** A msgpack map or JSON object, keys in file order. */
export type ValueMap = Map<string, Value>;

/** Decimal digits and exponent of |x|: the shortest that read back as x, or `precision` digits exact. */
function digitsOf(x: number, precision?: number): { digits: string; exp: number } {
  const s = precision === undefined ? Math.abs(x).toExponential() : Math.abs(x).toExponential(precision - 1);
  const [mant, e] = s.split("e") as [string, string];
  return { digits: mant.replace(".", ""), exp: Number(e) };
}

/** Python's repr of a float: "8.0", "1e-06", "2000000.0", "4294967294000000.0", "1e+16", "nan". */
export function pyFloat(x: number): string {
  if (Number.isNaN(x)) return "nan";
  if (!Number.isFinite(x)) return x > 0 ? "inf" : "-inf";
  if (x === 0) return Object.is(x, -0) ? "-0.0" : "0.0";
  const { digits, exp } = digitsOf(x);
  return (x < 0 ? "-" : "") + layout(digits.replace(/0+$/, "") || "0", exp, 16, true);
}

/** Digits d0 d1 ... with d0 at 10^exp: positional for -4 <= exp < big, else d.ddde+XX. */
function layout(digits: string, exp: number, big: number, pointZero: boolean): string {
  if (exp < -4 || exp >= big) {
    const mant = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    return `${mant}e${exp < 0 ? "-" : "+"}${String(Math.abs(exp)).padStart(2, "0")}`;
  }
  if (exp < 0) return "0." + "0".repeat(-exp - 1) + digits;
  if (digits.length <= exp + 1) return digits + "0".repeat(exp + 1 - digits.length) + (pointZero ? ".0" : "");
  return `${digits.slice(0, exp + 1)}.${digits.slice(exp + 1)}`;
}

/**
 * Python's format(x, f".{p}g"): p significant digits, rounded half to even on the exact binary
 * value (JavaScript's toPrecision rounds ties up), trailing zeros dropped.
 */
export function pyG(x: number, p: number): string {
  if (!Number.isFinite(x)) return pyFloat(x);
  if (x === 0) return Object.is(x, -0) ? "-0" : "0";
  // 100 exact significant digits: enough to see whether the cut falls on a tie.
  const { digits: all, exp: e0 } = digitsOf(x, 100);
  let keep = all.slice(0, p);
  const rest = all.slice(p);
  let exp = e0;
  const tie = rest[0] === "5" && /^5 0*$/.test(rest[0] + " " + rest.slice(1));
  const up = rest[0]! > "5" || (rest[0] === "5" && !tie) || (tie && Number(keep[keep.length - 1]) % 2 === 1);
  if (up) {
    const bumped = (BigInt(keep) + 1n).toString();
    if (bumped.length > keep.length) {
      exp += 1;
      keep = bumped.slice(0, p);
    } else {
      keep = bumped.padStart(keep.length, "0");
    }
  }
  return (x < 0 ? "-" : "") + layout(keep.replace(/0+$/, "") || "0", exp, p, false);
}

/** A bound as the reader prints it (reader._num): "any", an integer below 1e15, else .6g. */
export function num(x: number | bigint | null): string {
  if (x === null) return "any";
  if (typeof x === "bigint") return (x < 0n ? -x : x) < 10n ** 15n ? x.toString() : pyG(Number(x), 6);
  return Number.isInteger(x) && Math.abs(x) < 1e15 ? BigInt(x).toString() : pyG(x, 6);
}

/** Python's repr of a str: quotes, backslash escapes, \x/\u/\U for what str.isprintable refuses. */
export function pyStr(s: string): string {
  const quote = s.includes("'") && !s.includes('"') ? '"' : "'";
  let out = quote;
  for (const ch of s) {
    const cp = ch.codePointAt(0)!;
    if (ch === quote || ch === "\\") out += "\\" + ch;
    else if (cp === 0x09) out += "\\t";
    else if (cp === 0x0a) out += "\\n";
    else if (cp === 0x0d) out += "\\r";
    else if (!inRanges(PY_NONPRINTABLE, cp)) out += ch;
    else if (cp < 0x100) out += "\\x" + cp.toString(16).padStart(2, "0");
    else if (cp < 0x10000) out += "\\u" + cp.toString(16).padStart(4, "0");
    else out += "\\U" + cp.toString(16).padStart(8, "0");
  }
  return out + quote;
}

/** The quote Python's repr of bytes uses: ' unless the bytes hold ' and no ". */
function bytesQuote(b: Uint8Array): string {
  return b.includes(0x27) && !b.includes(0x22) ? '"' : "'";
}

/** The inside of Python's repr of bytes, with quote `quote`. */
function bytesBody(b: Uint8Array, quote: string): string {
  let out = "";
  for (const c of b) {
    if (c === quote.charCodeAt(0) || c === 0x5c) out += "\\" + String.fromCharCode(c);
    else if (c === 0x09) out += "\\t";
    else if (c === 0x0a) out += "\\n";
    else if (c === 0x0d) out += "\\r";
    else if (c >= 0x20 && c < 0x7f) out += String.fromCharCode(c);
    else out += "\\x" + c.toString(16).padStart(2, "0");
  }
  return out;
}

/** Python's repr of bytes: b'...' with \x escapes. */
export function pyBytes(b: Uint8Array): string {
  const quote = bytesQuote(b);
  return "b" + quote + bytesBody(b, quote) + quote;
}

/** Python's full repr (str() of a list, for shapes: "[8]", "[7, None]"). */
export function pyRepr(v: Value | undefined): string {
  if (v === null || v === undefined) return "None";
  if (typeof v === "boolean") return v ? "True" : "False";
  if (typeof v === "bigint") return v.toString();
  if (typeof v === "number") return pyFloat(v);
  if (typeof v === "string") return pyStr(v);
  if (v instanceof Uint8Array) return pyBytes(v);
  if (Array.isArray(v)) return "[" + v.map(pyRepr).join(", ") + "]";
  return "{" + [...v].map(([k, x]) => `${pyStr(k)}: ${pyRepr(x)}`).join(", ") + "}";
}

/** Python's comparison of strings: by code point (JavaScript's < compares UTF-16 units). */
export function comparePy(a: string, b: string): number {
  const x = Array.from(a);
  const y = Array.from(b);
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const d = x[i]!.codePointAt(0)! - y[i]!.codePointAt(0)!;
    if (d !== 0) return d;
  }
  return x.length - y.length;
}

/** s[:i] + "..." + s[len - j:] in code points, reprlib's way of shortening. */
function cut(s: string, limit: number): string {
  const cps = Array.from(s);
  if (cps.length <= limit) return s;
  const i = Math.max(0, Math.floor((limit - 3) / 2));
  const j = Math.max(0, limit - 3 - i);
  return cps.slice(0, i).join("") + "..." + cps.slice(cps.length - j).join("");
}

/** reprlib.Repr with the reader's limits (maxlevel 2, maxlist 6, maxdict 4, maxstring 60, maxother 60). */
function reprlib(v: Value, level: number): string {
  if (typeof v === "string") {
    // reprlib.repr_str, with Python's slicing (a negative start counts from the end).
    const cps = Array.from(v);
    let s = pyStr(cps.slice(0, 60).join(""));
    if (Array.from(s).length > 60) {
      const i = 28;
      const j = 29;
      const from = cps.length - j < 0 ? Math.max(0, 2 * cps.length - j) : cps.length - j;
      s = pyStr(cps.slice(0, i).join("") + cps.slice(from).join(""));
      const r = Array.from(s);
      s = r.slice(0, i).join("") + "..." + r.slice(Math.max(0, r.length - j)).join("");
    }
    return s;
  }
  if (typeof v === "bigint") return cut(v.toString(), 40);
  if (Array.isArray(v)) {
    if (level <= 0 && v.length) return "[...]";
    const pieces = v.slice(0, 6).map((x) => reprlib(x, level - 1));
    if (v.length > 6) pieces.push("...");
    return "[" + pieces.join(", ") + "]";
  }
  if (v instanceof Map) {
    if (v.size === 0) return "{}";
    if (level <= 0) return "{...}";
    const keys = [...v.keys()].sort(comparePy);
    const pieces = keys.slice(0, 4).map((k) => `${reprlib(k, level - 1)}: ${reprlib(v.get(k)!, level - 1)}`);
    if (v.size > 4) pieces.push("...");
    return "{" + pieces.join(", ") + "}";
  }
  // float, bytes, bool, None: repr_instance, cut to maxother
  return cut(pyRepr(v), 60);
}

/** A value from the file for an error message: short (reprlib) and escaped (reader._show). */
export function show(v: Value): string {
  if (v instanceof Uint8Array && v.length > 64) {
    // The repr of a megabyte bin would be built only to be cut to its ends (repr_instance).
    const quote = bytesQuote(v);
    const head = ("b" + quote + bytesBody(v.subarray(0, 28), quote)).slice(0, 28);
    const tail = bytesBody(v.subarray(v.length - 29), quote) + quote;
    return escape(head + "..." + tail.slice(tail.length - 29));
  }
  return escape(reprlib(v, 2));
}

/** Python's json.dumps(v, ensure_ascii=True) with its default separators. */
export function jsonDumps(v: Value): string {
  if (v === null) return "null";
  if (typeof v === "boolean") return v ? "true" : "false";
  if (typeof v === "bigint") return v.toString();
  if (typeof v === "number") {
    if (Number.isNaN(v)) return "NaN";
    if (!Number.isFinite(v)) return v > 0 ? "Infinity" : "-Infinity";
    return pyFloat(v);
  }
  if (typeof v === "string") {
    let out = '"';
    for (let i = 0; i < v.length; i++) {
      const c = v.charCodeAt(i);
      const ch = v[i]!;
      if (ch === '"') out += '\\"';
      else if (ch === "\\") out += "\\\\";
      else if (ch === "\n") out += "\\n";
      else if (ch === "\r") out += "\\r";
      else if (ch === "\t") out += "\\t";
      else if (ch === "\b") out += "\\b";
      else if (ch === "\f") out += "\\f";
      else if (c < 0x20 || c >= 0x7f) out += "\\u" + c.toString(16).padStart(4, "0");
      else out += ch;
    }
    return out + '"';
  }
  if (v instanceof Uint8Array) return pyBytes(v);
  if (Array.isArray(v)) return "[" + v.map(jsonDumps).join(", ") + "]";
  return "{" + [...v].map(([k, x]) => `${jsonDumps(k)}: ${jsonDumps(x)}`).join(", ") + "}";
}

/** The msgpack or JSON type of a value, in the reader's words (reader._KIND). */
export function kindOf(v: Value | undefined): string {
  if (v === null || v === undefined) return "nil";
  if (typeof v === "boolean") return "boolean";
  if (typeof v === "bigint") return "integer";
  if (typeof v === "number") return "float";
  if (typeof v === "string") return "string";
  if (v instanceof Uint8Array) return "bin";
  if (Array.isArray(v)) return "array";
  return "map";
}
