/**
 * The container (schema.json "container"): one msgpack map sealed by its last entry. The digest
 * is checked first; then the map is decoded by this module's own decoder, which checks depth,
 * declared lengths and the value budget before it allocates, refuses a repeated or non-string
 * key, and leaves binary values in place (`Bin`: an offset and a length). Integers decode as
 * bigint and floats as number, so that a field's msgpack type is kept. Codes container.*, path "".
 */
import { SCHEMA } from "./contract.js";
import { BundleError } from "./errors.js";
import { sha256 } from "./sha256.js";

/** A binary value left in the bundle: `length` bytes at `offset`. */
export class Bin {
  constructor(readonly offset: number, readonly length: number) {}
}

export type Value = null | boolean | bigint | number | string | Bin | Value[] | ValueMap;
export type ValueMap = Map<string, Value>;

const C = SCHEMA.container;
const TAIL = Uint8Array.from(C.digest_tail_hex.match(/../g)!.map((h) => parseInt(h, 16)));
const TAIL_BYTES = TAIL.length + C.digest_bytes;

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** Strict UTF-8 (no surrogates, no overlong forms; a BOM is kept), or null. */
export function decodeUtf8(bytes: Uint8Array): string | null {
  try {
    return utf8.decode(bytes);
  } catch {
    return null;
  }
}

function refuse(code: string, why: string): BundleError {
  return new BundleError(code, "", why);
}

interface Frame {
  readonly c: Value[] | ValueMap;
  left: number;
  key: string | null;
}

/**
 * The one msgpack map `data` holds, binary values as `Bin` (`firstEntries` > 0: only that many
 * of the top map's entries, to identify a file that is not sealed).
 */
export function readDocument(data: Uint8Array, firstEntries = 0): ValueMap {
  const size = data.length;
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const need = (at: number, n: number): void => {
    if (at + n > size) throw refuse("container.msgpack", "not valid msgpack: a value is cut short");
  };
  const uint = (at: number, n: number): number => {
    need(at, n);
    return n === 1 ? data[at]! : n === 2 ? view.getUint16(at) : view.getUint32(at);
  };
  let pos = 0;
  let left = Math.floor(size / C.bytes_per_value) + C.value_allowance;
  const stack: Frame[] = [];
  for (;;) {
    need(pos, 1);
    const b = data[pos++]!;
    let value: Value;
    let count = 0;
    let isMap = false;
    let container = false;
    if (b <= 0x7f || b >= 0xe0) {
      value = BigInt(b <= 0x7f ? b : b - 0x100);
    } else if (b <= 0x9f || (b >= 0xdc && b <= 0xdf)) {
      const n = b <= 0x9f ? 0 : b === 0xdc || b === 0xde ? 2 : 4;
      count = n ? uint(pos, n) : b & 0x0f;
      pos += n;
      isMap = b <= 0x8f || b >= 0xde;
      if (count > C.max_container) throw refuse("container.count", `a container declares ${count} entries, more than ${C.max_container}`);
      left -= count + 1;
      if (left < 0) throw refuse("container.count", `more msgpack values than ${size} bytes may hold`);
      if (stack.length >= C.max_depth) throw refuse("container.depth", `containers nest deeper than ${C.max_depth}`);
      value = isMap ? new Map() : [];
      container = true;
    } else if (b <= 0xbf || (b >= 0xd9 && b <= 0xdb)) {
      const n = b <= 0xbf ? 0 : 1 << (b - 0xd9);
      const length = n ? uint(pos, n) : b & 0x1f;
      need(pos + n, length);
      const s = decodeUtf8(data.subarray(pos + n, pos + n + length));
      if (s === null) throw refuse("container.msgpack", "not valid msgpack: a string is not UTF-8");
      value = s;
      pos += n + length;
    } else if (b >= 0xc4 && b <= 0xc6) {
      const n = 1 << (b - 0xc4);
      const length = uint(pos, n);
      need(pos + n, length);
      value = new Bin(pos + n, length);
      pos += n + length;
    } else if (b >= 0xca && b <= 0xd3) {
      const n = [4, 8, 1, 2, 4, 8, 1, 2, 4, 8][b - 0xca]!;
      need(pos, n);
      value = b === 0xca ? view.getFloat32(pos) : b === 0xcb ? view.getFloat64(pos)
        : b === 0xcf ? view.getBigUint64(pos) : b === 0xd3 ? view.getBigInt64(pos)
        : BigInt(b < 0xd0 ? uint(pos, n) : n === 1 ? view.getInt8(pos) : n === 2 ? view.getInt16(pos) : view.getInt32(pos));
      pos += n;
    } else if (b === 0xc0 || b === 0xc2 || b === 0xc3) {
      value = b === 0xc0 ? null : b === 0xc3;
    } else if (b === 0xc1) {
      throw refuse("container.msgpack", "not valid msgpack: the reserved byte 0xc1");
    } else {
      throw refuse("container.extension", "a msgpack extension type, which no field may hold");
    }
    if (container && count) {
      stack.push({ c: value as Value[] | ValueMap, left: count * (isMap ? 2 : 1), key: null });
      continue;
    }
    for (;;) { // place the value, closing every container it completes
      const frame = stack[stack.length - 1];
      if (frame === undefined) {
        if (pos !== size && !firstEntries) throw refuse("container.msgpack", "not valid msgpack: bytes after the document");
        if (!(value instanceof Map)) throw refuse("container.not_bundle", "not a dpedge bundle: the top level is not a map");
        return value;
      }
      if (frame.c instanceof Map) {
        if (frame.key === null) {
          if (typeof value !== "string") throw refuse("container.key", "a map has a key that is not a string");
          if (frame.c.has(value)) throw refuse("container.repeated_key", `a map repeats the key "${value.slice(0, 80)}"`);
          frame.key = value;
        } else {
          frame.c.set(frame.key, value);
          frame.key = null;
        }
      } else {
        frame.c.push(value);
      }
      frame.left -= 1;
      if (firstEntries && stack.length === 1 && frame.c instanceof Map && frame.c.size >= firstEntries && frame.key === null) {
        return frame.c;
      }
      if (frame.left) break;
      value = stack.pop()!.c;
    }
  }
}

/**
 * Why a file without its digest entry is refused: pre-release, truncated, or not a bundle.
 * `name` is the magic expected: a file of that magic is truncated, one of another is not what
 * was asked for.
 */
function unsealed(data: Uint8Array, name: string): BundleError {
  const b = data[0];
  const notBundle = refuse("container.not_bundle", "not a dpedge bundle: no msgpack map whose first entry is format: dpedge");
  if (b === undefined || !((b >= 0x80 && b <= 0x8f) || b === 0xde || b === 0xdf)) return notBundle;
  let first: ValueMap = new Map();
  try {
    first = readDocument(data.subarray(0, 4096), 2);
  } catch (e) {
    if (!(e instanceof BundleError)) throw e;
  }
  if ([...first.keys()][0] !== "format") return notBundle;
  if (first.get("format") === SCHEMA.pre_release_name) {
    return refuse("container.pre_release", "a pre-release bundle (format dpedge-bundle), which dpedge 1.x does not " +
      "read: rebuild it with `python -m exporter build`");
  }
  if (first.get("format") === name) {
    return refuse("container.truncated", `the ${name === SCHEMA.format ? "bundle" : "encoder pack"} is truncated or ` +
      "corrupted: it does not end with its sha256 entry");
  }
  return notBundle;
}

/**
 * The file's digest, once checked: the file ends with the digest entry, and the digest is its
 * bytes'. `name` is the magic expected (a bundle's, or an encoder pack's, schema.json
 * "pack_format"); it decides only how a file without its digest entry is refused.
 */
export async function checkDigest(data: Uint8Array, name: string = SCHEMA.format): Promise<Uint8Array> {
  const n = data.length;
  if (n > C.max_bundle_bytes) throw refuse("container.size", `${n} bytes is larger than any bundle`);
  if (n < TAIL_BYTES || TAIL.some((x, i) => data[n - TAIL_BYTES + i] !== x)) throw unsealed(data, name);
  const digest = await sha256(data.subarray(0, n - TAIL_BYTES));
  if (digest.some((x, i) => data[n - C.digest_bytes + i] !== x)) {
    throw refuse("container.digest", "checksum mismatch: the bundle's bytes changed after it was written");
  }
  return digest;
}

/** The one map of sealed bytes, within the container's bounds, starting with format and version and ending with sha256. */
export function readSealed(data: Uint8Array): ValueMap {
  const doc = readDocument(data);
  const keys = [...doc.keys()];
  if (keys[0] !== "format" || keys[1] !== "version" || keys[keys.length - 1] !== "sha256") {
    throw refuse("container.layout", "the bundle's map does not start with format and version and end with sha256");
  }
  return doc;
}

/** The checked document of bundle bytes (of an encoder pack's, with its `name`): sealed by its digest, one map within the container's bounds. */
export async function readContainer(data: Uint8Array, name: string = SCHEMA.format): Promise<ValueMap> {
  await checkDigest(data, name);
  return readSealed(data);
}
