/**
 * Strict JSON for a bundle's tokenizer.json, read as Python's json.loads reads it (so that the
 * tokenizer family check sees the same document): integers stay integers (bigint) and floats
 * floats, objects keep their key order (Map), and what Python would read differently from the
 * Rust side is reported rather than resolved: a key twice in one object (JSON.parse keeps the
 * last, serde refuses the document) and the constants NaN and Infinity.
 */
import type { Value, ValueMap } from "./pyrepr.js";

/** Invalid JSON: the message says where, as Python's JSONDecodeError does. */
export class JsonSyntaxError extends Error {}

/** Valid JSON that the tokenizer family refuses (a repeated key, NaN): becomes the family's error. */
export class JsonRefused extends Error {}

/** Nesting beyond this is refused (Python's decoder stops near its recursion limit, 1000). */
const MAX_NESTING = 900;

/** `text` parsed; `onObject(pairs)` sees each object's pairs when it is complete (Python's object_pairs_hook). */
export function parseJson(text: string, onDuplicate: (key: string) => string): Value {
  let pos = 0;
  let depth = 0;
  const where = (at: number): string => {
    const before = text.slice(0, at);
    const line = before.split("\n").length;
    const column = at - before.lastIndexOf("\n");
    return `line ${line} column ${column} (char ${at})`;
  };
  const fail = (what: string, at = pos): never => {
    throw new JsonSyntaxError(`${what}: ${where(at)}`);
  };
  const ws = (): void => {
    while (pos < text.length) {
      const c = text.charCodeAt(pos);
      if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) pos++;
      else break;
    }
  };
  const string = (): string => {
    const start = pos;
    pos++; // the opening quote
    let out = "";
    let chunk = pos;
    for (;;) {
      if (pos >= text.length) fail("Unterminated string starting at", start);
      const c = text.charCodeAt(pos);
      if (c === 0x22) {
        out += text.slice(chunk, pos);
        pos++;
        return out;
      }
      if (c < 0x20) fail("Invalid control character at");
      if (c !== 0x5c) {
        pos++;
        continue;
      }
      out += text.slice(chunk, pos);
      const e = text[pos + 1];
      const simple: Record<string, string> = { '"': '"', "\\": "\\", "/": "/", b: "\b", f: "\f", n: "\n", r: "\r", t: "\t" };
      if (e !== undefined && e in simple) {
        out += simple[e];
        pos += 2;
      } else if (e === "u") {
        const hex = text.slice(pos + 2, pos + 6);
        if (!/^[0-9a-fA-F]{4}$/.test(hex)) fail("Invalid \\uXXXX escape", pos + 1);
        out += String.fromCharCode(parseInt(hex, 16));
        pos += 6;
      } else {
        fail("Invalid \\escape", pos);
      }
      chunk = pos;
    }
  };
  const number = (): Value => {
    const m = /^-?(?:0|[1-9]\d*)(\.\d+)?([eE][-+]?\d+)?/.exec(text.slice(pos, pos + 400));
    if (m === null || m[0] === "-") return fail("Expecting value");
    pos += m[0].length;
    return m[1] === undefined && m[2] === undefined ? BigInt(m[0]) : Number(m[0]);
  };
  const value = (): Value => {
    ws();
    const c = text[pos];
    if (c === "{") return object();
    if (c === "[") return array();
    if (c === '"') return string();
    for (const [word, v] of [["true", true], ["false", false], ["null", null]] as const) {
      if (text.startsWith(word, pos)) {
        pos += word.length;
        return v;
      }
    }
    for (const word of ["NaN", "Infinity", "-Infinity"]) {
      if (text.startsWith(word, pos)) throw new JsonRefused(`${word} is not JSON`);
    }
    if (c === "-" || (c !== undefined && c >= "0" && c <= "9")) return number();
    return fail("Expecting value");
  };
  const enter = (): void => {
    if (++depth > MAX_NESTING) throw new JsonRefused("it nests too deeply");
  };
  const array = (): Value[] => {
    enter();
    pos++;
    const out: Value[] = [];
    ws();
    if (text[pos] === "]") {
      pos++;
      depth--;
      return out;
    }
    for (;;) {
      out.push(value());
      ws();
      if (text[pos] === ",") {
        pos++;
        continue;
      }
      if (text[pos] === "]") {
        pos++;
        depth--;
        return out;
      }
      fail("Expecting ',' delimiter");
    }
  };
  const object = (): ValueMap => {
    enter();
    pos++;
    const pairs: [string, Value][] = [];
    ws();
    if (text[pos] === "}") {
      pos++;
    } else {
      for (;;) {
        ws();
        if (text[pos] !== '"') fail("Expecting property name enclosed in double quotes");
        const key = string();
        ws();
        if (text[pos] !== ":") fail("Expecting ':' delimiter");
        pos++;
        pairs.push([key, value()]);
        ws();
        if (text[pos] === ",") {
          pos++;
          continue;
        }
        if (text[pos] === "}") {
          pos++;
          break;
        }
        fail("Expecting ',' delimiter");
      }
    }
    depth--;
    const out: ValueMap = new Map();
    for (const [k, v] of pairs) {
      if (out.has(k)) throw new JsonRefused(onDuplicate(k));
      out.set(k, v);
    }
    return out;
  };
  if (text.startsWith("\ufeff")) fail("Unexpected UTF-8 BOM (decode using utf-8-sig)", 0);
  const doc = value();
  ws();
  if (pos !== text.length) fail("Extra data");
  return doc;
}
