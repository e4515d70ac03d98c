/**
 * The container (docs/bundle-format.md section 1), as runtime/bundle/reader.py reads it: the
 * digest first, then a pre-scan of the msgpack headers that bounds depth, container lengths
 * and the value budget before anything is allocated, then @msgpack/msgpack builds the values.
 *
 * @msgpack/msgpack is made for JavaScript's types, which lose what the format needs: an
 * integer and a float are both `number`, a map is an object (a repeated key silently
 * overwrites, integer-like keys are reordered), and an invalid UTF-8 string decodes to U+FFFD
 * instead of failing. So it is run with raw strings, 64-bit integers as bigint and every map
 * key replaced by a unique placeholder, and the pre-scan (which reads every header anyway,
 * like the Python reader's) records each scalar's msgpack type in file order. A walk over the
 * decoded tree in the same order then gives each value its Python type (an integer is a
 * bigint, a float a number, a str a string checked as strict UTF-8, a bin a Uint8Array view)
 * and each map its keys in file order, refusing repeated and non-string keys where Python's
 * object_pairs_hook does: when the map is complete.
 */
import { Decoder, ExtData } from "@msgpack/msgpack";
import { BundleError } from "./errors.js";
import {
  BYTES_PER_VALUE, DIGEST_BYTES, DIGEST_TAIL, FORMAT_NAME, MAX_BUNDLE_BYTES, MAX_CONTAINER, MAX_DEPTH,
  PRE_RELEASE_NAME, TAIL_BYTES, VALUE_ALLOWANCE,
} from "./generated/schema.js";
import { kindOf, pyBytes, pyStr, show, type Value, type ValueMap } from "./pyrepr.js";
import { sha256 } from "./sha256.js";
import { escape } from "./text.js";

const CORRUPTED = "checksum mismatch: the bundle is corrupted (its bytes changed after it was written)";
const EXTENSION = "not a dpedge bundle: it holds a msgpack extension type, which no field may";
const TOO_DEEP = `not a dpedge bundle: containers nest deeper than ${MAX_DEPTH}`;

/** Scalar kinds the pre-scan records, in file order. */
const NIL_OR_BOOL = 0;
const INT = 1;
const FLOAT = 2;
const STR = 3;
const BIN = 4;

/** What the pre-scan learnt: each scalar's kind in file order, and where each str's bytes are. */
interface Scan {
  kinds: number[];
  strStart: number[];
  strEnd: number[];
}

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** Strict UTF-8 (Python's str decoding: no surrogates, no overlong forms, a BOM kept), or null. */
export function decodeUtf8(bytes: Uint8Array): string | null {
  try {
    return utf8.decode(bytes);
  } catch {
    return null;
  }
}

function bigEndian(data: Uint8Array, pos: number, size: number): number {
  let v = 0;
  for (let i = pos; i < pos + size; i++) v = v * 256 + data[i]!;
  return v;
}

const INCOMPLETE = "not valid msgpack (ValueError: Unpack failed: incomplete input)";

/**
 * The container rules from the headers alone, as runtime/bundle/container.py's decoder applies
 * them, before @msgpack/msgpack allocates a container's declared length: depth, declared
 * lengths and the value budget, no extension type, no reserved byte, nothing cut short and
 * nothing after the document.
 */
export function prescan(data: Uint8Array): Scan {
  const n = data.length;
  const scan: Scan = { kinds: [], strStart: [], strEnd: [] };
  let pos = 0;
  let left = Math.floor(n / BYTES_PER_VALUE) + VALUE_ALLOWANCE;
  const todo = [1];
  while (todo.length) {
    if (todo[todo.length - 1] === 0) {
      todo.pop();
      continue;
    }
    todo[todo.length - 1]! -= 1;
    if (pos >= n) throw new BundleError(INCOMPLETE);
    const b = data[pos++]!;
    if (b <= 0x7f || b >= 0xe0) {
      scan.kinds.push(INT);
      continue;
    }
    let kind: string;
    let size = 0;
    if (b <= 0x8f) kind = "map";
    else if (b <= 0x9f) kind = "array";
    else if (b <= 0xbf) kind = "str";
    else if (b === 0xc0 || b === 0xc2 || b === 0xc3) kind = "nil";
    else if (b === 0xca || b === 0xcb) [kind, size] = ["float", b === 0xca ? 4 : 8];
    else if (b >= 0xcc && b <= 0xd3) [kind, size] = ["int", 1 << (b & 3)];
    else if (b >= 0xc4 && b <= 0xc6) [kind, size] = ["bin", 1 << (b - 0xc4)];
    else if (b >= 0xd9 && b <= 0xdb) [kind, size] = ["str", 1 << (b - 0xd9)];
    else if (b === 0xdc || b === 0xdd) [kind, size] = ["array", b === 0xdc ? 2 : 4];
    else if (b === 0xde || b === 0xdf) [kind, size] = ["map", b === 0xde ? 2 : 4];
    else if (b === 0xc1) throw new BundleError("not valid msgpack (FormatError: reserved byte 0xc1)");
    else throw new BundleError(EXTENSION);
    if (pos + size > n) throw new BundleError(INCOMPLETE);
    if (kind === "nil" || kind === "float" || kind === "int") {
      scan.kinds.push(kind === "nil" ? NIL_OR_BOOL : kind === "float" ? FLOAT : INT);
      pos += size;
      continue;
    }
    const count = size === 0 ? b & (b <= 0x9f ? 0x0f : 0x1f) : bigEndian(data, pos, size);
    pos += size;
    if (kind === "str" || kind === "bin") {
      if (pos + count > n) throw new BundleError(INCOMPLETE);
      scan.kinds.push(kind === "str" ? STR : BIN);
      if (kind === "str") {
        scan.strStart.push(pos);
        scan.strEnd.push(pos + count);
      }
      pos += count;
      continue;
    }
    if (count > MAX_CONTAINER) {
      throw new BundleError(`not valid msgpack (ValueError: ${count} exceeds max_${kind}_len(${MAX_CONTAINER}))`);
    }
    left -= count + 1;
    if (left < 0) throw new BundleError(`not a dpedge bundle: it holds more msgpack values than ${n} bytes may`);
    if (todo.length > MAX_DEPTH) throw new BundleError(TOO_DEEP);
    todo.push(kind === "map" ? 2 * count : count);
  }
  if (pos !== n) throw new BundleError("not valid msgpack (ExtraData: bytes after the document)");
  return scan;
}

function invalid(name: string, message: string): BundleError {
  return new BundleError(`not valid msgpack (${name}: ${escape(message).slice(0, 200)})`);
}

/** s[:n] in code points. */
function cutTo(s: string, n: number): string {
  return Array.from(s).slice(0, n).join("");
}

/** The decoded tree in Python's types, checked as Python's unpacker and pairs hook check it. */
function typed(raw: unknown, scan: Scan, data: Uint8Array, keys: unknown[]): Value {
  let k = 0;
  let s = 0;
  const next = (): number => {
    if (k >= scan.kinds.length) throw new BundleError("not valid msgpack (the pre-scan and the decoder disagree)");
    return scan.kinds[k++]!;
  };
  const str = (bytes: Uint8Array): string => {
    const text = decodeUtf8(bytes);
    if (text === null) throw new BundleError("not valid msgpack (UnicodeDecodeError: a string is not valid UTF-8)");
    return text;
  };
  const walk = (v: unknown): Value => {
    if (v === null || typeof v === "boolean") {
      next();
      return v;
    }
    if (typeof v === "number" || typeof v === "bigint") {
      return next() === INT ? BigInt(v) : Number(v);
    }
    if (v instanceof Uint8Array) {
      const kind = next();
      if (kind === STR) s++;
      return kind === STR ? str(v) : v;
    }
    if (Array.isArray(v)) return v.map(walk);
    // A map: each key checked when it is read, before its value, as the Python decoder does.
    const out: ValueMap = new Map();
    for (const [placeholder, item] of Object.entries(v as Record<string, unknown>)) {
      const key = keys[Number(placeholder.slice(1))];
      if (typeof key === "string") {
        next();
        const name = str(data.subarray(scan.strStart[s]!, scan.strEnd[s]!));
        s++;
        if (out.has(name)) throw new BundleError(`a map repeats the key ${cutTo(escape(pyStr(name)), 80)}`);
        out.set(name, walk(item));
      } else if (key instanceof Uint8Array) {
        // msgpack-python's strict_map_key lets bin keys through: the reader names them
        throw new BundleError(`a map has a key that is not a string: ${escape(pyBytes(key.subarray(0, 40)))}`);
      } else {
        const type = key === null ? "NoneType" : typeof key === "boolean" ? "bool" : typeof key === "bigint" ? "int"
          : typeof key === "number" ? (keyIsInt() ? "int" : "float") : Array.isArray(key) ? "list" : "dict";
        throw new BundleError(`not valid msgpack (ValueError: ${type} is not allowed for map key when strict_map_key=True)`);
      }
    }
    return out;
  };
  /** Whether the number key about to be read is a msgpack integer (the next recorded kind). */
  const keyIsInt = (): boolean => scan.kinds[k] === INT;
  return walk(raw);
}

/** @msgpack/msgpack over the whole file, with the pre-scan's kinds giving each value its type. */
function decodeDocument(data: Uint8Array, scan: Scan): Value {
  const keys: unknown[] = [];
  const decoder = new Decoder({
    useBigInt64: true,
    rawStrings: true,
    maxStrLength: data.length,
    maxBinLength: data.length,
    maxArrayLength: MAX_CONTAINER,
    maxMapLength: MAX_CONTAINER,
    keyDecoder: null,
    // Every key becomes its own placeholder: the object keeps file order, a repeated key
    // cannot overwrite, "__proto__" cannot reach the prototype. The walk restores the keys.
    mapKeyConverter: (key: unknown) => {
      keys.push(key);
      return `k${keys.length - 1}`;
    },
  });
  let raw: unknown;
  try {
    raw = decoder.decode(data);
  } catch (e) {
    if (e instanceof BundleError) throw e;
    const err = e as Error;
    throw invalid(err.name || "Error", String(err.message));
  }
  return typed(raw, scan, data, keys);
}

/**
 * The top map's first two entries of a file's first 4096 bytes (container.py's read_document
 * with first_entries=2), or null where that decoder would fail: a key that is not a string or
 * repeats, a string that is not UTF-8 (this decoder writes U+FFFD for those), an extension.
 */
function firstEntries(head: Uint8Array): Map<string, unknown> | null {
  const b = head[0]!;
  const header = b <= 0x8f ? 1 : b === 0xde ? 3 : 5;
  if (head.length < header) return null;
  const count = header === 1 ? b & 0x0f : bigEndian(head, 1, header - 1);
  const first = new Map<string, unknown>();
  try {
    const decoder = new Decoder({ useBigInt64: true, maxArrayLength: MAX_CONTAINER, maxMapLength: MAX_CONTAINER });
    let key: unknown = undefined;
    for (const v of decoder.decodeMulti(head.subarray(header))) {
      const bad = (x: unknown): boolean => (typeof x === "string" && x.includes("\ufffd")) || x instanceof Date ||
        x instanceof ExtData ||
        (typeof x === "object" && x !== null && !(x instanceof Uint8Array) && !Array.isArray(x) &&
          Object.values(x).some(bad)) || (Array.isArray(x) && x.some(bad));
      if (bad(v)) return null;
      if (key === undefined) {
        if (typeof v !== "string" || first.has(v)) return null;
        key = v;
      } else {
        first.set(key as string, v);
        key = undefined;
        if (first.size >= Math.min(2, count)) break;
      }
    }
  } catch {
    return null;
  }
  return first.size >= Math.min(2, count) ? first : null;
}

/** Why a file that does not end with its digest entry is refused (container.Source._unsealed). */
export function unsealed(data: Uint8Array): string {
  const b = data[0];
  if (b === undefined || !((b >= 0x80 && b <= 0x8f) || b === 0xde || b === 0xdf)) {
    return "not a dpedge bundle (it does not start with a msgpack map)";
  }
  const first = firstEntries(data.subarray(0, 4096)) ?? new Map<string, unknown>();
  if ([...first.keys()][0] !== "format") return "not a dpedge bundle (its first entry is not format: dpedge)";
  if (first.get("format") === PRE_RELEASE_NAME) {
    // (this decoder gives small integers as numbers; Python shows "?" for a float here too)
    const v = first.get("version");
    const isInt = (x: unknown): boolean => typeof x === "bigint" || (typeof x === "number" && Number.isInteger(x));
    const shown = Array.isArray(v) && v.every(isInt) ? v.map(String).join(".") : "?";
    return (
      `this bundle uses the pre-release format ${escape(shown)}, which dpedge 1.x does not read: rebuild it ` +
      "with `python -m exporter build` (a new release of the data: its epsilon adds to the old bundle's if both " +
      "are used)"
    );
  }
  if (first.get("format") === FORMAT_NAME) {
    return "the bundle is truncated or corrupted: it does not end with its 'sha256' entry";
  }
  return "not a dpedge bundle (its first entry is not format: dpedge)";
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * The checked document (reader.parse): sealed by its digest, one msgpack map, no repeated key,
 * within the value budget, depth and types of the container.
 */
export async function parse(data: Uint8Array): Promise<ValueMap> {
  if (data.length > MAX_BUNDLE_BYTES) {
    throw new BundleError(`${data.length} bytes is larger than any bundle (${MAX_BUNDLE_BYTES} max)`);
  }
  const n = data.length;
  if (n < TAIL_BYTES || !equalBytes(data.subarray(n - TAIL_BYTES, n - DIGEST_BYTES), DIGEST_TAIL)) {
    throw new BundleError(unsealed(data));
  }
  const digest = await sha256(data.subarray(0, n - TAIL_BYTES));
  if (!equalBytes(digest, data.subarray(n - DIGEST_BYTES))) throw new BundleError(CORRUPTED);
  const doc = decodeDocument(data, prescan(data));
  if (!(doc instanceof Map)) {
    throw new BundleError(`not a dpedge bundle (its top level is ${kindOf(doc)}, expected a map)`);
  }
  const keys = [...doc.keys()];
  if (keys[0] !== "format" || keys[1] !== "version" || keys[keys.length - 1] !== "sha256") {
    throw new BundleError(
      `a bundle's map starts with 'format' and 'version' and ends with 'sha256', got ${show(keys.slice(0, 2))} ... ` +
        `${show(keys[keys.length - 1] ?? null)}`,
    );
  }
  return doc;
}
