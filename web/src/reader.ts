/**
 * Reading bundles (runtime/bundle/reader.py): `readBundle(bytes)` returns a validated `Bundle`
 * or throws one `BundleError`, with the Python reader's refusals in its order and with its key
 * phrases.
 *
 * The reader interprets the format's table (FIELDS, generated from runtime/bundle/schema.py)
 * rather than checking each field by hand: presence (required, optional, or present exactly
 * when its condition holds), msgpack type (a float field refuses an integer and the reverse),
 * finiteness, bounds, choices, text rules, and for an array record its dtype, its shape
 * against the symbols C, D, k, T, H, its byte count and its finite values; unknown keys are
 * refused in a bundle of a minor version this reader knows. Then the relations (RELATIONS, by
 * hand, as in every reader), then the tokenizer and model families, before any engine sees a
 * byte of the encoder.
 */
import { parse } from "./container.js";
import { BundleError } from "./errors.js";
import {
  CONDITIONS, DIMS, FIELDS, FORMAT_MAJOR, FORMAT_MINOR, FORMAT_NAME, MAX_TEXT_CHARS, PRIVACY_RTOL, STATISTICS,
  TEXT_LIMITS, type Field,
} from "./generated/schema.js";
import { checkModel } from "./model_family.js";
import { comparePy, kindOf, num, pyFloat, pyG, pyRepr, pyStr, show, type Value, type ValueMap } from "./pyrepr.js";
import { escape, fold, pyLen, pyStrip, unprintable, uPlus } from "./text.js";
import { checkTokenizerJson } from "./tokenizer_family.js";

/** One release's privacy facts (its noisy values live in the Bundle). */
export interface ReleaseFacts {
  readonly statistic: string;
  readonly epsilon: number;
  readonly sensitivity_l1: number;
  readonly noise_scale: number;
  readonly mechanism: string;
  readonly grid?: number;
  readonly clip_l1?: number;
}

/** What the bundle says about its encoder: the model bytes and what a reader does around them. */
export interface EncoderSpec {
  readonly format: "onnx" | "tflite";
  readonly model: Uint8Array;
  /** The ONNX initializers' external data (a view of the bundle's bytes, not a copy). */
  readonly weights: Uint8Array;
  readonly tokenizerJson: string;
  readonly maxLength: number;
  readonly dim: number;
  readonly textPrefix: string;
  readonly inputs: readonly string[];
  readonly output: string;
  readonly checkText: string;
  readonly checkEmbedding: Float32Array;
  readonly facts: ValueMap | null;
}

/** The blend's constants (docs/bundle-format.md section 7). */
export interface Scoring {
  readonly centroid_temperature: number;
  readonly prior_temperature: number;
  readonly prior_records_per_class: number;
  readonly description_pull: number;
}

/**
 * A decoded, validated bundle. Arrays are flat, C order, in the shapes of docs/bundle-format.md:
 * classCounts [C], classSums [C, k] (grid units), origin [D], projection [k, D], votes
 * [T, 2^H, C], hyperplanes [T, H, D], offsets [T, H], prior [C, D].
 */
export interface Bundle {
  readonly version: readonly [number, number];
  readonly labels: readonly string[];
  readonly labelDescriptions: readonly string[] | null;
  /** The privacy map as read (numbers as in the file: integers are bigint). */
  readonly privacy: ValueMap;
  readonly epsilon: number;
  /** K: records one privacy unit may contribute. */
  readonly recordsPerUnit: number;
  readonly releases: Readonly<Record<string, ReleaseFacts>>;
  readonly encoder: EncoderSpec;
  readonly dims: Readonly<{ C: number; D: number; k: number; T: number; H: number }>;
  readonly classCounts: Int32Array | null;
  readonly classSums: Int32Array | null;
  readonly origin: Float32Array | null;
  readonly projection: Float32Array | null;
  readonly votes: Int16Array | null;
  readonly hyperplanes: Float32Array | null;
  readonly offsets: Float32Array | null;
  readonly seed: bigint | null;
  readonly prior: Float32Array | null;
  readonly scoring: Scoring | null;
  readonly exporter: ValueMap | null;
  readonly requires: readonly string[] | null;
}

const FIELDS_BY_PATH = new Map(FIELDS.map((f) => [f.path, f]));

function fail(f: Field | string, why: string): BundleError {
  return new BundleError(`field '${typeof f === "string" ? f : f.path}' ${why}`);
}

/** Whether `doc` holds the dotted `path` (every map on the way included). */
export function hasPath(doc: ValueMap, path: string): boolean {
  let node: Value | undefined = doc;
  for (const key of path.split(".")) {
    if (!(node instanceof Map) || !node.has(key)) return false;
    node = node.get(key);
  }
  return true;
}

const CONDITION: Record<string, (d: ValueMap) => boolean> = {
  "class statistics": (d) => hasPath(d, "releases.class_sums") || hasPath(d, "releases.class_counts"),
  votes: (d) => hasPath(d, "releases.votes"),
  prior: (d) => hasPath(d, "label_descriptions") && hasPath(d, "releases.class_sums"),
  blend: (d) => hasPath(d, "releases.class_sums"),
  onnx: (d) => {
    const e = d.get("encoder");
    return e instanceof Map && e.get("format") === "onnx";
  },
};
// Every condition of the table has its predicate here (a new one fails at import, as in Python).
for (const name of Object.keys(CONDITIONS)) if (!(name in CONDITION)) throw new Error(`no predicate for condition ${name}`);

type Dims = Record<string, number>;

function version(doc: ValueMap): [number, number] {
  const format = doc.get("format")!;
  if (format !== FORMAT_NAME) {
    throw new BundleError(`not a dpedge bundle: field 'format' is ${show(format)}, expected ${pyStr(FORMAT_NAME)}`);
  }
  const v = doc.get("version")!;
  if (!(Array.isArray(v) && v.length === 2 && v.every((x) => typeof x === "bigint" && x >= 0n && x < 2n ** 31n))) {
    throw new BundleError(`field 'version' must be [major, minor], got ${show(v)}`);
  }
  const [major, minor] = v.map(Number) as [number, number];
  if (major !== FORMAT_MAJOR) {
    throw new BundleError(`bundle format version ${major}.${minor} is not 1.x, the only format dpedge reads`);
  }
  return [major, minor];
}

function bounded(f: Field, x: number | bigint, what: string): void {
  if ((f.low !== null && x < f.low) || (f.high !== null && x > f.high)) {
    throw fail(f, `${what} ${show(x)}, expected ${num(f.low)} to ${num(f.high)}`);
  }
}

/** Text rules: length, and no unprintable character where the table asks for printable text. */
function text(f: Field, where: string, s: string): void {
  const most = TEXT_LIMITS[f.text ?? ""] ?? (f.kind === "strings" ? MAX_TEXT_CHARS : null);
  const n = pyLen(s);
  if (most !== null && n > most) throw fail(where, `has ${n} characters, more than ${most}`);
  if (f.text !== null || f.kind === "strings") {
    const bad = unprintable(s);
    if (bad !== null) throw fail(where, `holds ${uPlus(bad)}, which is not printable`);
  }
  if ((f.text === "label" || f.text === "description") && !pyStrip(fold(s))) {
    throw fail(where, "shows nothing (it is empty once invisible characters are removed)");
  }
}

const EXPECTED: Record<string, string> = {
  map: "map", str: "string", int: "integer", float: "float", bool: "boolean", bin: "bin", version: "array",
};

/** One field's value checked against its row of the table. */
function value(f: Field, v: Value, dims: Dims): Value | Float32Array | Int32Array | Int16Array {
  if (f.kind === "any") return v;
  if (f.kind === "ndarray") return array(f, v, dims);
  const got = kindOf(v);
  const want = f.kind === "strings" ? "array" : EXPECTED[f.kind]!;
  if (got !== want) throw fail(f, `is ${got}, expected ${f.kind === "strings" ? "an array of strings" : want}`);
  if (f.kind === "float" && !Number.isFinite(v as number)) throw fail(f, `is ${pyFloat(v as number)}, not a finite number`);
  if (f.kind === "int" || f.kind === "float") bounded(f, v as number | bigint, "is");
  else if (f.kind === "str") bounded(f, BigInt(pyLen(v as string)), "has length");
  else if (f.kind === "bin" || f.kind === "strings") bounded(f, BigInt((v as Uint8Array | Value[]).length), "has length");
  if (f.open) informational(f, v);
  if (f.kind === "str") {
    text(f, f.path, v as string);
    if (f.choices.length && !f.choices.includes(v as string)) {
      throw fail(f, `is ${show(v)}, expected one of ${f.choices.map(pyStr).join(", ")}`);
    }
  }
  if (f.kind === "strings") {
    const items = v as Value[];
    items.forEach((item, i) => {
      if (typeof item !== "string") throw fail(`${f.path}[${i}]`, `is ${kindOf(item)}, expected string`);
      text(f, `${f.path}[${i}]`, item);
    });
    if (f.choices.length && (new Set(items).size !== items.length || !items.every((x) => f.choices.includes(x as string)))) {
      throw fail(f, `must hold distinct names of ${f.choices.join(", ")}, got ${show(v)}`);
    }
  }
  return v;
}

/** An open map holds nil, booleans, integers, finite floats, strings, arrays and maps only (reader._informational). */
function informational(f: Field, v: Value): void {
  const stack: Value[] = [v];
  while (stack.length) {
    const x = stack.pop()!;
    if (x instanceof Uint8Array) throw fail(f, "holds binary data, which informational fields may not");
    if (typeof x === "number" && !Number.isFinite(x)) throw fail(f, `holds ${pyFloat(x)}, not a finite number`);
    if (x instanceof Map) stack.push(...x.values());
    else if (Array.isArray(x)) stack.push(...x);
  }
}

const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** An array record's data as a typed array (copied: aligned, and independent of the caller's buffer). */
function typedArray(dtype: string, data: Uint8Array): Float32Array | Int32Array | Int16Array {
  const size = dtype === "<i2" ? 2 : 4;
  const n = data.length / size;
  if (LITTLE_ENDIAN) {
    const copy = new Uint8Array(data).buffer; // a copy of exactly these bytes (Buffer.slice would share)
    return dtype === "<f4" ? new Float32Array(copy) : dtype === "<i4" ? new Int32Array(copy) : new Int16Array(copy);
  }
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const out = dtype === "<f4" ? new Float32Array(n) : dtype === "<i4" ? new Int32Array(n) : new Int16Array(n);
  for (let i = 0; i < n; i++) {
    out[i] = dtype === "<f4" ? view.getFloat32(4 * i, true) : dtype === "<i4" ? view.getInt32(4 * i, true) : view.getInt16(2 * i, true);
  }
  return out;
}

function array(f: Field, v: Value, dims: Dims): Float32Array | Int32Array | Int16Array {
  if (!(v instanceof Map)) throw fail(f, `is ${kindOf(v)}, expected an array record (map of dtype, shape, data)`);
  const keys = [...v.keys()];
  if (keys.length !== 3 || !["dtype", "shape", "data"].every((k) => v.has(k))) {
    throw fail(f, `must have exactly the keys dtype, shape and data, got ${show(keys.sort(comparePy))}`);
  }
  const dtype = v.get("dtype")!;
  const shape = v.get("shape")!;
  const data = v.get("data")!;
  if (dtype !== f.dtype) throw fail(`${f.path}.dtype`, `is ${show(dtype)}, expected ${pyStr(f.dtype!)}`);
  if (!(Array.isArray(shape) && shape.length === f.shape.length && shape.every((n) => typeof n === "bigint"))) {
    throw fail(`${f.path}.shape`, `is ${show(shape)}, expected ${f.shape.length} integers [${f.shape.join(", ")}]`);
  }
  const sizes = shape as bigint[];
  const shown = pyRepr(sizes);
  f.shape.forEach((symbol, i) => {
    const n = sizes[i]!;
    const power = symbol.startsWith("2^");
    const name = power ? symbol.slice(2) : symbol;
    if (!(name in dims)) {
      if (power && !(n >= 2n && (n & (n - 1n)) === 0n)) {
        throw fail(`${f.path}.shape`, `is ${shown}: its ${symbol} axis is not a power of two`);
      }
      const value = power ? BigInt(n.toString(2).length - 1) : n;
      const { low, high } = DIMS[name]!;
      if (!(value >= low && value <= high)) throw fail(`${f.path}.shape`, `is ${shown}: ${name} must be ${low} to ${high}`);
      dims[name] = Number(value);
    }
    if (n !== (power ? 2n ** BigInt(dims[name]!) : BigInt(dims[name]!))) {
      const want = f.shape.map((s) => {
        const base = s.startsWith("2^") ? s.slice(2) : s;
        if (!(base in dims)) return null;
        return s.startsWith("2^") ? 2n ** BigInt(dims[base]!) : BigInt(dims[s]!);
      });
      throw fail(`${f.path}.shape`, `is ${shown}, expected [${f.shape.join(", ")}] = ${pyRepr(want)}`);
    }
  });
  if (!(data instanceof Uint8Array)) throw fail(`${f.path}.data`, `is ${kindOf(data)}, expected bin`);
  const itemsize = f.dtype === "<i2" ? 2n : 4n;
  const needs = sizes.reduce((a, b) => a * b, 1n) * itemsize;
  if (BigInt(data.length) !== needs) {
    throw fail(`${f.path}.data`, `has ${data.length} bytes, but ${f.dtype} ${shown} needs ${needs}`);
  }
  const a = typedArray(f.dtype!, data);
  if (a instanceof Float32Array) {
    for (let i = 0; i < a.length; i++) if (!Number.isFinite(a[i]!)) throw fail(f, "holds a value that is not finite");
  }
  return a;
}

type Values = Map<string, Value | Float32Array | Int32Array | Int16Array>;

/** Every field of the table checked; the present ones by path, and the shape symbols' values. */
function fields(doc: ValueMap, newerMinor: boolean): [Values, Dims] {
  const values: Values = new Map([["", doc]]);
  const labels = doc.get("labels");
  const dims: Dims = { C: Array.isArray(labels) ? labels.length : 0 };
  for (const f of FIELDS) {
    const parent = values.get(f.parent);
    if (parent === undefined) continue; // the parent map is absent
    const p = parent as ValueMap;
    if (f.need.startsWith("iff ")) {
      const condition = f.need.slice(4);
      const wanted = CONDITION[condition]!(doc);
      if (p.has(f.key) !== wanted) throw fail(f, `must be present exactly when ${CONDITIONS[condition]}`);
      if (!wanted) continue;
    } else if (!p.has(f.key)) {
      if (f.need === "required") throw new BundleError(`missing field '${f.path}'`);
      continue;
    }
    const v = value(f, p.get(f.key)!, dims);
    values.set(f.path, v);
    if (f.path === "encoder.dim") {
      const d = Number(v as bigint);
      if (!("D" in dims)) dims["D"] = d;
      else if (dims["D"] !== d) throw fail(f, `is ${d}, but the arrays before it are ${dims["D"]}-d`);
    }
  }
  for (const [path, v] of values) {
    const f = FIELDS_BY_PATH.get(path);
    if (f !== undefined && (f.kind !== "map" || f.open)) continue;
    const known = new Set(FIELDS.filter((g) => g.parent === path).map((g) => g.key));
    const unknown = [...(v as ValueMap).keys()].filter((k) => !known.has(k));
    if (unknown.length && path === "releases") {
      throw fail(`releases.${escape(unknown[0]!)}`, "is a release this reader cannot account for");
    }
    if (unknown.length && !newerMinor) {
      throw new BundleError(`unknown field '${escape(path ? `${path}.${unknown[0]}` : unknown[0]!)}' in a version ` +
        `${FORMAT_MAJOR}.${FORMAT_MINOR} bundle`);
    }
  }
  return [values, dims];
}

/** Python's math.fsum: the correctly rounded sum (Shewchuk's partials). */
export function fsum(xs: readonly number[]): number {
  const partials: number[] = [];
  for (let x of xs) {
    let i = 0;
    for (let y of partials) {
      if (Math.abs(x) < Math.abs(y)) [x, y] = [y, x];
      const hi = x + y;
      const lo = y - (hi - x);
      if (lo !== 0) partials[i++] = lo;
      x = hi;
    }
    partials.length = i;
    partials.push(x);
  }
  let hi = 0;
  let n = partials.length;
  if (n > 0) {
    hi = partials[--n]!;
    let lo = 0;
    while (n > 0) {
      const x = hi;
      const y = partials[--n]!;
      hi = x + y;
      const yr = hi - x;
      lo = y - yr;
      if (lo !== 0) break;
    }
    // Round half to even across the partials, as CPython does.
    if (n > 0 && ((lo < 0 && partials[n - 1]! < 0) || (lo > 0 && partials[n - 1]! > 0))) {
      const y = lo * 2;
      const x = hi + y;
      if (y === x - hi) hi = x;
    }
  }
  return hi;
}

/** Python's math.isclose with a relative tolerance. */
function isClose(a: number, b: number, rel: number): boolean {
  return a === b || Math.abs(a - b) <= rel * Math.max(Math.abs(a), Math.abs(b));
}

/** Python's round() of a float to an integer: half to even. */
export function roundHalfEven(x: number): bigint {
  const floor = Math.floor(x);
  const diff = x - floor;
  const r = diff > 0.5 ? floor + 1 : diff < 0.5 ? floor : floor % 2 === 0 ? floor : floor + 1;
  return BigInt(r);
}

function release(v: Values, name: string): ReleaseFacts {
  const p = `releases.${name}.`;
  const grid = v.get(p + "grid");
  const clip = v.get(p + "clip_l1");
  return {
    statistic: name,
    epsilon: v.get(p + "epsilon") as number,
    sensitivity_l1: Number(v.get(p + "sensitivity_l1") as bigint),
    noise_scale: v.get(p + "noise_scale") as number,
    mechanism: v.get(p + "mechanism") as string,
    ...(grid === undefined ? {} : { grid: Number(grid as bigint) }),
    ...(clip === undefined ? {} : { clip_l1: clip as number }),
  };
}

function decode(doc: ValueMap, ver: [number, number]): Bundle {
  const [v, dims] = fields(doc, ver[1] > FORMAT_MINOR);
  const requires = (v.get("requires") as string[] | undefined) ?? null;
  const unknownPath = (requires ?? []).find((r) => !FIELDS_BY_PATH.has(r));
  if (unknownPath !== undefined) {
    throw new BundleError(`this bundle requires '${escape(unknownPath)}', which this dpedge does not know: upgrade ` +
      "dpedge to read it");
  }
  const releases: Record<string, ReleaseFacts> = {};
  for (const name of STATISTICS) if (v.has(`releases.${name}`)) releases[name] = release(v, name);
  if (!("class_sums" in releases) && !("votes" in releases)) {
    throw new BundleError("field 'releases' holds neither class_sums nor votes: nothing to classify with");
  }
  const eps = v.get("privacy.epsilon") as number;
  const total = fsum(Object.values(releases).map((r) => r.epsilon));
  if (!isClose(total, eps, PRIVACY_RTOL)) {
    throw new BundleError(`the releases spend epsilon ${pyFloat(total)}, but field 'privacy.epsilon' is ${pyFloat(eps)}: ` +
      "their shares must add up to it");
  }
  const perUnit = v.get("privacy.max_records_per_unit") as bigint;
  for (const r of Object.values(releases)) {
    const where = `releases.${r.statistic}`;
    const needs = r.sensitivity_l1 / r.epsilon;
    if (!isClose(r.noise_scale, needs, PRIVACY_RTOL)) {
      throw fail(`${where}.noise_scale`, `is ${pyFloat(r.noise_scale)}, but sensitivity ${r.sensitivity_l1} at epsilon ` +
        `${pyFloat(r.epsilon)} needs ${pyFloat(needs)}: the privacy facts contradict each other`);
    }
    let one = r.statistic === "class_counts" ? 1n : BigInt(dims["T"] ?? 0);
    if (r.statistic === "class_sums") {
      one = roundHalfEven(r.grid! * r.clip_l1!);
      if (one < 1n) throw fail(`${where}.clip_l1`, `is ${pyFloat(r.clip_l1!)}: less than one grid step of 1/${r.grid}`);
    }
    if (BigInt(r.sensitivity_l1) !== perUnit * one) {
      throw fail(`${where}.sensitivity_l1`, `is ${r.sensitivity_l1}, but a ${r.statistic} release with at most ` +
        `${perUnit} record(s) per unit has ${perUnit} x ${one}: the privacy facts contradict each other`);
    }
  }
  const labels = v.get("labels") as string[];
  const descriptions = (v.get("label_descriptions") as string[] | undefined) ?? null;
  if (descriptions !== null && descriptions.length !== labels.length) {
    throw fail("label_descriptions", `has ${descriptions.length} entries for ${labels.length} labels`);
  }
  const seen = new Map<string, number>();
  labels.forEach((label, i) => {
    const key = fold(label);
    const j = seen.get(key);
    if (j !== undefined) {
      throw new BundleError(`labels ${j} and ${i} (${show(labels[j]!)} and ${show(label)}) look the same once ` +
        "normalised (NFKC, invisible characters removed)");
    }
    seen.set(key, i);
  });
  if ("k" in dims && dims["k"]! > dims["D"]!) {
    throw fail("subspace.projection", `has ${dims["k"]} rows, more than the embedding size ${dims["D"]}`);
  }
  const check = v.get("encoder.check_embedding") as Float32Array;
  let squares = 0;
  for (const x of check) squares += x * x;
  const norm = Math.sqrt(squares);
  if (!(norm > 0.9 && norm < 1.1)) throw fail("encoder.check_embedding", `has norm ${pyG(norm, 4)}, expected a unit vector`);
  const weights = (v.get("encoder.weights") as Uint8Array | undefined) ?? new Uint8Array(0);
  if (v.has("encoder.weights")) {
    const top = [...doc.keys()];
    const enc = [...(doc.get("encoder") as ValueMap).keys()];
    if (top[top.length - 2] !== "encoder" || enc[enc.length - 1] !== "weights") {
      throw fail("encoder.weights", "must be the last entry of 'encoder', the last map before 'sha256'");
    }
  }
  const format = v.get("encoder.format") as "onnx" | "tflite";
  const model = v.get("encoder.model") as Uint8Array;
  checkTokenizerJson(v.get("encoder.tokenizer_json") as string);
  checkModel(format, model, weights.length);
  const scoring = v.has("scoring")
    ? {
        centroid_temperature: v.get("scoring.centroid_temperature") as number,
        prior_temperature: v.get("scoring.prior_temperature") as number,
        prior_records_per_class: v.get("scoring.prior_records_per_class") as number,
        description_pull: v.get("scoring.description_pull") as number,
      }
    : null;
  const get = <T>(path: string): T | null => (v.get(path) as T | undefined) ?? null;
  return {
    version: ver,
    labels,
    labelDescriptions: descriptions,
    privacy: v.get("privacy") as ValueMap,
    epsilon: eps,
    recordsPerUnit: Number(perUnit),
    releases,
    encoder: {
      format,
      model,
      weights,
      tokenizerJson: v.get("encoder.tokenizer_json") as string,
      maxLength: Number(v.get("encoder.max_length") as bigint),
      dim: Number(v.get("encoder.dim") as bigint),
      textPrefix: v.get("encoder.text_prefix") as string,
      inputs: v.get("encoder.inputs") as string[],
      output: v.get("encoder.output") as string,
      checkText: v.get("encoder.check_text") as string,
      checkEmbedding: check,
      facts: get<ValueMap>("encoder.facts"),
    },
    dims: { C: dims["C"]!, D: dims["D"]!, k: dims["k"] ?? 0, T: dims["T"] ?? 0, H: dims["H"] ?? 0 },
    classCounts: get<Int32Array>("releases.class_counts.values"),
    classSums: get<Int32Array>("releases.class_sums.values"),
    origin: get<Float32Array>("subspace.origin"),
    projection: get<Float32Array>("subspace.projection"),
    votes: get<Int16Array>("releases.votes.values"),
    hyperplanes: get<Float32Array>("hashing.hyperplanes"),
    offsets: get<Float32Array>("hashing.offsets"),
    seed: get<bigint>("hashing.seed"),
    prior: get<Float32Array>("prior"),
    scoring,
    exporter: get<ValueMap>("exporter"),
    requires,
  };
}

/**
 * Parse and validate bundle bytes. The bytes are copied first, so a caller that reuses its
 * buffer cannot change the bundle between the checks and the engine.
 */
export async function readBundle(bytes: Uint8Array | ArrayBuffer): Promise<Bundle> {
  // A plain Uint8Array copy: Node's Buffer.slice would share the caller's memory.
  const data = bytes instanceof Uint8Array ? new Uint8Array(bytes) : new Uint8Array(bytes.slice(0));
  const doc = await parse(data);
  return decode(doc, version(doc));
}
