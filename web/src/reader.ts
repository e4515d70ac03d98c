/**
 * Reading bundles: `readBundle(bytes)` returns a validated `Bundle` or throws one BundleError
 * (code, path, message). It interprets format/1/schema.json in the order the contract makes
 * normative, so every reader gives a file the same first refusal: the container, the version,
 * every field of the table in its order (presence; then type, finiteness, bounds, text rules
 * (length, unprintable, unassigned, blank), choices; an array record's dtype, shape, data and
 * finite values; `requires` and `encoder_pack` are judged as soon as they are read, and a field
 * marked listed is looked up in `requires` right after its value), unknown keys, the relations
 * in order, the tokenizer family and the model family.
 *
 * Encoder packs (1.1): `readPack(bytes)` reads a file holding one encoder, checked as a
 * bundle's encoder is; a statistics bundle names its pack by digest instead of carrying an
 * encoder, and is read with it: `readBundle(bytes, { pack })`.
 */
import { ACCOUNTANT_RTOL, headEpsilon } from "./accounting.js";
import { Bin, checkDigest, readContainer, readSealed, type Value, type ValueMap } from "./container.js";
import { SCHEMA, UNICODE, type FieldRow } from "./contract.js";
import { BundleError } from "./errors.js";
import { checkModel, DEFAULT_FAMILY } from "./model_family.js";
import { cpLength } from "./unicode.js";
import { labelKey, showsSomething, unassigned, unprintable, uPlus } from "./text.js";
import { checkTokenizerJson, type Json } from "./tokenizer_family.js";

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

/**
 * The head release (1.1): a linear softmax layer trained by DP-SGD on the frozen embeddings,
 * with the facts of its (epsilon, delta) guarantee. A text's scores are
 * softmax(weights (x - origin) + bias); weights are [C, D], C order.
 */
export interface HeadRelease {
  readonly epsilon: number;
  readonly delta: number;
  /**
   * round(grid x clip_l2): how far one unit (a record, or a person's records clipped together,
   * 1.3) moves one step's gradient sum (L2, grid units).
   */
  readonly sensitivity_l2: number;
  /** The Gaussian's standard deviation in grid units: noise_multiplier x sensitivity_l2. */
  readonly noise_scale: number;
  readonly noise_multiplier: number;
  /** Poisson sampling: each unit (a record, or a person) is in a step's batch with this probability. */
  readonly sample_rate: number;
  readonly steps: number;
  readonly grid: number;
  readonly clip_l2: number;
  /** The accountant the exporter calibrated with, in words (informational). */
  readonly accountant: string;
  readonly mechanism: string;
  readonly origin: Float32Array;
  readonly weights: Float32Array;
  readonly bias: Float32Array;
}

export type EncoderFormat = "onnx" | "tflite";

/** The architecture of an encoder (encoder.family, 1.2): which operators its model may use. */
export type EncoderFamily = "bert" | "mpnet";

/** What the bundle says about its encoder. */
export interface EncoderSpec {
  readonly format: EncoderFormat;
  /** The encoder's family (1.2; "bert" when the file names none). */
  readonly family: EncoderFamily;
  readonly model: Uint8Array;
  /** The ONNX initializers' external data (empty for TFLite). */
  readonly weights: Uint8Array;
  readonly tokenizerJson: string;
  /** The tokenizer.json as the family check parsed it. */
  readonly tokenizer: Map<string, Json>;
  readonly maxLength: number;
  readonly dim: number;
  readonly textPrefix: string;
  readonly inputs: readonly string[];
  readonly output: string;
  readonly checkText: string;
  readonly checkEmbedding: Float32Array;
  readonly facts: ValueMap | null;
}

/** The blend's constants. */
export interface Scoring {
  readonly centroid_temperature: number;
  readonly prior_temperature: number;
  readonly prior_records_per_class: number;
  readonly description_pull: number;
}

/**
 * A decoded, validated bundle. Arrays are flat, C order: classCounts [C], classSums [C, k] (grid
 * units), origin [D], projection [k, D], votes [T, 2^H, C], hyperplanes [T, H, D], offsets
 * [T, H], prior [C, D]. Maps are as read (integers bigint, floats number, binary values Bin).
 */
export interface Bundle {
  readonly version: readonly [number, number];
  readonly labels: readonly string[];
  readonly labelDescriptions: readonly string[] | null;
  readonly privacy: ValueMap;
  readonly epsilon: number;
  /** The bundle's delta: 0 for pure epsilon-DP; the head's delta with a head (1.1). */
  readonly delta: number;
  /** K: records one privacy unit may contribute. */
  readonly recordsPerUnit: number;
  /** B: the disjoint batches whose releases the statistics sum (1.1; absent: 1). */
  readonly batches: number;
  readonly releases: Readonly<Record<string, ReleaseFacts>>;
  readonly encoder: EncoderSpec;
  readonly dims: Readonly<{ C: number; D: number; k: number; T: number; H: number }>;
  readonly classCounts: Int32Array | null;
  readonly classSums: Int32Array | null;
  readonly origin: Float32Array | null;
  readonly projection: Float32Array | null;
  readonly votes: Int16Array | null;
  /** The noisy number of persons a person-level head's rule read (1.3), else null. */
  readonly unitCount: number | null;
  readonly hyperplanes: Float32Array | null;
  readonly offsets: Float32Array | null;
  readonly seed: bigint | null;
  readonly prior: Float32Array | null;
  readonly scoring: Scoring | null;
  readonly exporter: ValueMap | null;
  readonly requires: readonly string[] | null;
  /** The digest of the encoder pack the bundle names (a statistics bundle), else null: the bundle carries its encoder. */
  readonly encoderPack: Uint8Array | null;
  /** The linear head (1.1, an approximate (epsilon, delta) release), else null: a bundle with one is scored by it alone. */
  readonly head: HeadRelease | null;
}

/**
 * A checked encoder pack (1.1): its digest, which a statistics bundle names in encoder_pack, and
 * the encoder it holds. Made by `readPack` only: its checked field values stand in for a
 * bundle's own encoder rows when the bundle is read with it.
 */
export interface EncoderPack {
  readonly digest: Uint8Array;
  /** The digest in hex, as people and `expect` lists write it. */
  readonly sha256: string;
  readonly encoder: EncoderSpec;
}

interface Field extends FieldRow {
  readonly key: string;
  readonly parent: string;
}

const FIELDS: readonly Field[] = SCHEMA.fields.map((row) => {
  const dot = row.path.lastIndexOf(".");
  return { ...row, key: row.path.slice(dot + 1), parent: dot < 0 ? "" : row.path.slice(0, dot) };
});
const BY_PATH = new Map(FIELDS.map((f) => [f.path, f]));
/**
 * An encoder pack's rows: its magic, the version and the table's encoder (required there), then
 * the digest; a pack holds nothing else.
 */
const PACK_FIELDS: readonly Field[] = [
  { ...BY_PATH.get("format")!, choices: [SCHEMA.pack_format] }, BY_PATH.get("version")!,
  ...FIELDS.filter((f) => f.path === "encoder" || f.parent.split(".")[0] === "encoder")
    .map((f) => (f.path === "encoder" ? { ...f, need: "required" } : f)),
  BY_PATH.get("sha256")!,
];

type Decoded = Value | Uint8Array | Float32Array | Int32Array | Int16Array;
type Dims = Record<string, number>;

function fail(code: string, path: string, why: string): BundleError {
  return new BundleError(code, path, `${path}: ${why}`);
}

/** A short description of a value's msgpack type, for messages. */
function kind(v: Value): string {
  return v === null ? "nil" : v instanceof Bin ? "bin" : v instanceof Map ? "map" : Array.isArray(v) ? "array"
    : typeof v === "bigint" ? "integer" : typeof v === "number" ? "float" : typeof v === "boolean" ? "boolean" : "string";
}

function hasPath(doc: ValueMap, path: string): boolean {
  let node: Value | undefined = doc;
  for (const key of path.split(".")) {
    if (!(node instanceof Map) || !node.has(key)) return false;
    node = node.get(key);
  }
  return true;
}

function holds(name: string, doc: ValueMap): boolean {
  const rule = SCHEMA.conditions[name]!;
  if ("present_any" in rule) return rule.present_any.some((p) => hasPath(doc, p));
  if ("present_all" in rule) return rule.present_all.every((p) => hasPath(doc, p));
  if ("present_none" in rule) return !rule.present_none.some((p) => hasPath(doc, p));
  const [path, want] = rule.equals;
  let node: Value | undefined = doc;
  for (const key of path.split(".")) node = node instanceof Map ? node.get(key) : undefined;
  return node === want;
}

const hex = (b: Uint8Array): string => Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");

/** The version of a file whose magic is `name` (a bundle's, or an encoder pack's). */
function version(doc: ValueMap, name: string): [number, number] {
  const format = doc.get("format");
  if (format !== name) {
    const swapped: Record<string, string> = {
      [SCHEMA.format]: "it is a bundle, not an encoder pack", [SCHEMA.pack_format]: "it is an encoder pack, not a bundle" };
    const what = typeof format === "string" && format in swapped ? swapped[format]
      : `not a dpedge ${name === SCHEMA.format ? "bundle" : "encoder pack"}`;
    throw fail("version.format", "format", `is not "${name}": ${what}`);
  }
  const v = doc.get("version");
  if (!(Array.isArray(v) && v.length === 2 && v.every((x) => typeof x === "bigint" && x >= 0n && x < 2n ** 31n))) {
    throw fail("version.malformed", "version", "is not [major, minor]");
  }
  const [major, minor] = v.map(Number) as [number, number];
  if (major !== SCHEMA.version[0]) throw fail("version.major", "version", `is ${major}.${minor}; this reader reads 1.x`);
  return [major, minor];
}

const TYPES: Record<string, (v: Value) => boolean> = {
  map: (v) => v instanceof Map, str: (v) => typeof v === "string", int: (v) => typeof v === "bigint",
  float: (v) => typeof v === "number", bool: (v) => typeof v === "boolean", bin: (v) => v instanceof Bin,
  version: Array.isArray, strings: Array.isArray,
};

function bounded(f: Field, x: number | bigint, code: string, what: string): void {
  if ((f.low !== undefined && x < f.low) || (f.high !== undefined && x > f.high)) {
    throw fail(code, f.path, `${what} ${x}, outside ${f.low ?? "-inf"} to ${f.high ?? "inf"}`);
  }
}

/** The text kind's rules, in order: its length, no unprintable, (labels, descriptions) no unassigned, something shown. */
function text(f: Field, where: string, s: string): void {
  if (f.text === undefined) return;
  const { max_chars: most, rules } = SCHEMA.text.kinds[f.text]!;
  const n = cpLength(s);
  if (n > most) throw fail("field.length", where, `has ${n} characters, more than ${most}`);
  for (const rule of rules) {
    const bad = rule === "unprintable" ? unprintable(s) : rule === "unassigned" ? unassigned(s) : null;
    if (bad !== null) {
      throw fail(`text.${rule}`, where, rule === "unprintable" ? `holds ${uPlus(bad)}, which is not printable`
        : `holds ${uPlus(bad)}, which Unicode ${UNICODE.unicode_version} does not assign`);
    }
    if (rule === "blank" && !showsSomething(s)) throw fail("text.blank", where, "shows nothing (blank or invisible characters only)");
  }
}

/** One field's value checked against its row of the table (arrays decoded, binary values read). */
function value(f: Field, v: Value, dims: Dims, data: Uint8Array): Decoded {
  if (f.kind === "ndarray") return array(f, v, dims, data);
  if (!TYPES[f.kind]!(v)) throw fail("field.type", f.path, `is ${kind(v)}, expected ${f.kind}`);
  if (f.kind === "float" && !Number.isFinite(v)) throw fail("field.not_finite", f.path, `is ${v}, not a finite number`);
  if (f.kind === "int" || f.kind === "float") bounded(f, v as number | bigint, "field.range", "is");
  else if (f.kind === "str") bounded(f, cpLength(v as string), "field.length", "has length");
  else if (f.kind === "bin" || f.kind === "strings") bounded(f, (v as Bin | Value[]).length, "field.length", "has length");
  if (f.kind === "bin") return data.subarray((v as Bin).offset, (v as Bin).offset + (v as Bin).length);
  if (f.open) {
    const stack = [v];
    while (stack.length) { // the order every reader walks an open map in
      const x = stack.pop()!;
      if (x instanceof Bin) throw fail("field.type", f.path, "holds binary data, which informational fields may not");
      if (typeof x === "number" && !Number.isFinite(x)) throw fail("field.not_finite", f.path, `holds ${x}`);
      if (x instanceof Map) stack.push(...x.values());
      else if (Array.isArray(x)) stack.push(...x);
    }
  }
  const choices = f.choices ?? [];
  if (typeof v === "string") {
    text(f, f.path, v);
    if (choices.length && !choices.includes(v)) throw fail("field.choice", f.path, `is "${v}", expected one of ${choices.join(", ")}`);
  }
  if (f.kind === "strings") {
    const items = v as Value[];
    items.forEach((item, i) => {
      if (typeof item !== "string") throw fail("field.type", `${f.path}[${i}]`, `is ${kind(item)}, expected string`);
      text(f, `${f.path}[${i}]`, item);
    });
    if (choices.length && (new Set(items).size !== items.length || !items.every((x) => choices.includes(x as string)))) {
      throw fail("field.choice", f.path, `must hold distinct names of ${choices.join(", ")}`);
    }
  }
  return v;
}

function array(f: Field, v: Value, dims: Dims, data: Uint8Array): Float32Array | Int32Array | Int16Array {
  if (!(v instanceof Map && v.size === 3 && v.has("dtype") && v.has("shape") && v.has("data"))) {
    throw fail("array.record", f.path, "is not an array record (a map of exactly dtype, shape and data)");
  }
  const [dtype, shape, bin] = [v.get("dtype"), v.get("shape"), v.get("data")];
  if (dtype !== f.dtype) throw fail("array.dtype", `${f.path}.dtype`, `is not "${f.dtype}"`);
  const symbols = f.shape!;
  const where = `${f.path}.shape`;
  if (!(Array.isArray(shape) && shape.length === symbols.length && shape.every((n) => typeof n === "bigint"))) {
    throw fail("array.shape", where, `is not ${symbols.length} integers [${symbols.join(", ")}]`);
  }
  const sizes = shape as bigint[];
  symbols.forEach((symbol, i) => {
    const n = sizes[i]!;
    const power = symbol.startsWith("2^");
    const name = power ? symbol.slice(2) : symbol;
    if (!(name in dims)) {
      if (power && !(n >= 2n && (n & (n - 1n)) === 0n)) throw fail("array.shape", where, `axis ${i} (${symbol}) is not a power of two`);
      const d = power ? BigInt(n.toString(2).length - 1) : n;
      const { low, high } = SCHEMA.dims[name]!;
      if (!(d >= low && d <= high)) throw fail("array.shape", where, `gives ${name} = ${d}, outside ${low} to ${high}`);
      dims[name] = Number(d);
    }
    const want = power ? 2n ** BigInt(dims[name]!) : BigInt(dims[name]!);
    if (n !== want) throw fail("array.shape", where, `axis ${i} is ${n}, but ${symbol} is ${want}`);
  });
  if (!(bin instanceof Bin)) throw fail("array.data", `${f.path}.data`, "is not bin");
  const itemsize = SCHEMA.dtypes[f.dtype!]!;
  const count = sizes.reduce((a, b) => a * b, 1n);
  if (BigInt(bin.length) !== count * BigInt(itemsize)) {
    throw fail("array.data", `${f.path}.data`, `has ${bin.length} bytes, but ${f.dtype} [${sizes.join(", ")}] needs ${count * BigInt(itemsize)}`);
  }
  const n = Number(count);
  const at = new DataView(data.buffer, data.byteOffset + bin.offset, bin.length);
  if (f.dtype === "<i2") return Int16Array.from({ length: n }, (_, i) => at.getInt16(2 * i, true));
  if (f.dtype === "<i4") return Int32Array.from({ length: n }, (_, i) => at.getInt32(4 * i, true));
  const a = Float32Array.from({ length: n }, (_, i) => at.getFloat32(4 * i, true));
  if (!a.every(Number.isFinite)) throw fail("field.not_finite", f.path, "holds a value that is not finite");
  return a;
}

/**
 * `requires` is judged as soon as it is read (the table's third row): a newer bundle is refused
 * for what this reader does not know before anything it lacks.
 */
function requires(doc: ValueMap, data: Uint8Array): void {
  if (!doc.has("requires")) return;
  (value(BY_PATH.get("requires")!, doc.get("requires")!, {}, data) as string[]).forEach((r, i) => {
    if (!BY_PATH.has(r)) throw fail("version.requires", `requires[${i}]`, `names "${r}", which this reader does not know: upgrade dpedge`);
  });
}

/**
 * Relation "listed": a present field marked listed is in `requires` (already checked), since its
 * absence would change an answer: a reader that does not know it must refuse, not ignore it.
 */
function listed(f: Field, doc: ValueMap): void {
  const paths = doc.get("requires");
  if (f.listed && !(Array.isArray(paths) && paths.includes(f.path))) {
    throw fail("relation.requires", "requires", `must list ${f.path}, which this bundle has`);
  }
}

/** The checked field values of each pack `readPack` made (the encoder's paths). */
const PACK_VALUES = new WeakMap<EncoderPack, ReadonlyMap<string, Decoded>>();

/**
 * A statistics bundle names its encoder pack (1.1): it is read with that pack alone, and a
 * bundle with its own encoder with none.
 */
function namedPack(doc: ValueMap, data: Uint8Array, pack: EncoderPack | undefined): void {
  if (!doc.has("encoder_pack")) {
    if (pack !== undefined) {
      throw fail("pack.unexpected", "encoder_pack", "is absent: this bundle carries its own encoder, yet an encoder pack was given for it");
    }
    return;
  }
  const f = BY_PATH.get("encoder_pack")!;
  const named = value(f, doc.get("encoder_pack")!, {}, data) as Uint8Array;
  listed(f, doc);
  if (pack === undefined) throw fail("pack.missing", "encoder_pack", `names encoder pack ${hex(named)}, and none was given`);
  if (hex(named) !== pack.sha256) {
    throw fail("pack.mismatch", "encoder_pack", `names encoder pack ${hex(named)}, not the one given (${pack.sha256})`);
  }
}

/**
 * Every field of `rows` (a bundle's table, or a pack's) in its order, then unknown keys; the
 * present fields by path, and the shape symbols. With `pack`, the encoder's values are the
 * pack's, checked when it was read.
 */
function fields(doc: ValueMap, ver: [number, number], data: Uint8Array, rows: readonly Field[],
                pack?: EncoderPack): [Map<string, Decoded>, Dims] {
  const values = new Map<string, Decoded>([["", doc]]);
  const labels = doc.get("labels");
  const dims: Dims = { C: Array.isArray(labels) ? labels.length : 0 };
  const ofPack = (path: string): boolean => pack !== undefined && path.split(".")[0] === "encoder";
  if (pack !== undefined) {
    for (const [path, v] of PACK_VALUES.get(pack)!) values.set(path, v);
    dims["D"] = pack.encoder.dim;
  }
  for (const f of rows) {
    if (ofPack(f.parent)) continue;
    const parent = values.get(f.parent) as ValueMap | undefined;
    if (parent === undefined) continue; // the parent map is absent
    if (f.need.startsWith("iff ")) {
      const wanted = holds(f.need.slice(4), doc);
      if (parent.has(f.key) && !wanted) {
        throw fail("field.not_allowed", f.path, `must be absent unless ${SCHEMA.conditions[f.need.slice(4)]!.doc}`);
      }
      if (!wanted) continue;
    }
    if (!parent.has(f.key)) {
      if (f.need !== "optional") throw fail("field.missing", f.path, "is missing");
      continue;
    }
    const v = value(f, parent.get(f.key)!, dims, data);
    values.set(f.path, v);
    listed(f, doc);
    if (f.path === "encoder.dim") {
      dims["D"] ??= Number(v);
      if (dims["D"] !== Number(v)) throw fail("array.shape", f.path, `is ${v}, but the arrays before it are ${dims["D"]}-d`);
    }
  }
  for (const [path, v] of values) {
    const f = BY_PATH.get(path);
    if ((f !== undefined && (f.kind !== "map" || f.open)) || ofPack(path)) continue;
    const known = new Set(rows.filter((g) => g.parent === path).map((g) => g.key));
    const unknown = [...(v as ValueMap).keys()].find((k) => !known.has(k));
    if (unknown !== undefined && path === "releases") {
      throw fail("field.release", `releases.${unknown}`, "is a release this reader cannot account for");
    }
    if (unknown !== undefined && !(ver[1] > SCHEMA.version[1])) { // a newer minor's fields are ignored
      throw fail("field.unknown", path ? `${path}.${unknown}` : unknown, `is not a field of a version ${ver.join(".")} file`);
    }
  }
  return [values, dims];
}

/** Round half to even, as the contract rounds grid x clip_l1 (x is finite). */
function roundHalfEven(x: number): bigint {
  const floor = Math.floor(x);
  const diff = x - floor;
  return BigInt(diff > 0.5 || (diff === 0.5 && floor % 2 !== 0) ? floor + 1 : floor);
}

const isClose = (a: number, b: number): boolean => Math.abs(a - b) <= SCHEMA.privacy_rtol * Math.max(Math.abs(a), Math.abs(b));

/**
 * Relation "composition": privacy.composition, when present, is the contract's words for the
 * bundle's releases (in "statistics" order), its head and B (section 5).
 */
function composition(text: string | undefined, releases: string[], head: boolean, batches: bigint): void {
  if (text === undefined) return;
  const words = SCHEMA.wording.composition;
  const names = SCHEMA.statistics.filter((s) => releases.includes(s));
  const within = words[head ? "head" : "pure"].replace("{releases}", names.join(words.separator));
  const want = batches > 1n ? words.batches.replace("{batches}", String(batches)).replace("{within}", within) : within;
  if (text !== want) throw fail("relation.composition", "privacy.composition", `must be "${want}"`);
}

/** Relation "wording": the privacy unit and the neighbour relation are the words of K. */
function wording(unit: string, relation: string, k: bigint): void {
  const { record, person } = SCHEMA.wording;
  const withK = (s: string): string => s.replaceAll("{K}", String(k));
  if (unit === record.privacy_unit) {
    if (k !== 1n) throw fail("relation.wording", "privacy.privacy_unit", `says one record, but K is ${k}`);
    if (relation !== record.neighbour_relation) {
      throw fail("relation.wording", "privacy.neighbour_relation", `must be "${record.neighbour_relation}" for a unit of one record`);
    }
    return;
  }
  if (unit !== withK(person.privacy_unit)) {
    throw fail("relation.wording", "privacy.privacy_unit", `must be "${record.privacy_unit}" or "${withK(person.privacy_unit)}" for K = ${k}`);
  }
  const [prefix, suffix] = [withK(person.neighbour_relation_prefix), person.neighbour_relation_suffix];
  if (!(relation.startsWith(prefix) && relation.endsWith(suffix) && relation.length > prefix.length + suffix.length)) {
    throw fail("relation.wording", "privacy.neighbour_relation", `must read "${prefix}...${suffix}" for K = ${k}`);
  }
}

function relations(v: Map<string, Decoded>, dims: Dims, releases: ReleaseFacts[], head: HeadRelease | null, doc: ValueMap): void {
  const has = (name: string): boolean => releases.some((r) => r.statistic === name);
  if (!has("class_sums") && !has("votes") && head === null) {
    throw fail("relation.nothing", "releases", "holds neither class_sums, votes nor head: nothing to classify with");
  }
  const perUnit = v.get("privacy.max_records_per_unit") as bigint;
  if (head !== null && (has("class_sums") || has("votes"))) {
    throw fail("relation.head", "releases.head", "must come with class_counts alone (and unit_count when K is above 1)");
  }
  // A person-level head (K above 1, 1.3) reads the noisy number of persons: unit_count comes with it and only with it.
  if (has("unit_count") !== (head !== null && perUnit !== 1n)) {
    throw fail("relation.unit_count", "releases.unit_count", head !== null
      ? "must come with a person-level head (K above 1), and such a head with it" : "comes only with a person-level head");
  }
  const eps = v.get("privacy.epsilon") as number;
  let total = 0;
  for (const r of releases) total += r.epsilon; // in release order, left to right, the head last: every reader adds alike
  if (head !== null) total += head.epsilon;
  if (!isClose(total, eps)) throw fail("relation.shares", "privacy.epsilon", `is ${eps}, but the releases spend ${total}`);
  const delta = v.get("privacy.delta") as number;
  if (head === null ? delta !== 0 : !isClose(delta, head.delta)) { // -0 is 0
    throw fail("relation.delta", "privacy.delta", `is ${delta}, but the releases' deltas add up to ${head === null ? 0 : head.delta}`);
  }
  for (const r of releases) {
    const where = `releases.${r.statistic}`;
    const needs = r.sensitivity_l1 / r.epsilon;
    if (!isClose(r.noise_scale, needs)) {
      throw fail("relation.noise_scale", `${where}.noise_scale`, `is ${r.noise_scale}, but sensitivity over epsilon is ${needs}`);
    }
    let one = r.statistic === "class_counts" ? 1n : BigInt(dims["T"] ?? 0);
    if (r.statistic === "class_sums") {
      one = roundHalfEven(r.grid! * r.clip_l1!);
      if (one < 1n) throw fail("relation.clip", `${where}.clip_l1`, `is less than one grid step of 1/${r.grid}`);
    }
    if (r.statistic === "unit_count") {
      // One unit moves a count of units by 1, whatever K is.
      if (r.sensitivity_l1 !== 1) {
        throw fail("relation.sensitivity", `${where}.sensitivity_l1`, `is ${r.sensitivity_l1}, but one unit moves a count of units by 1`);
      }
    } else if (BigInt(r.sensitivity_l1) !== perUnit * one) {
      throw fail("relation.sensitivity", `${where}.sensitivity_l1`, `is ${r.sensitivity_l1}, but K = ${perUnit} gives ${perUnit * one}`);
    }
  }
  if (head !== null) headRelations(head);
  wording(v.get("privacy.privacy_unit") as string, v.get("privacy.neighbour_relation") as string, perUnit);
  composition(v.get("privacy.composition") as string | undefined, releases.map((r) => r.statistic), head !== null,
    (v.get("privacy.batches") as bigint | undefined) ?? 1n);
  const labels = v.get("labels") as string[];
  const descriptions = v.get("label_descriptions") as string[] | undefined;
  if (descriptions !== undefined && descriptions.length !== labels.length) {
    throw fail("relation.descriptions", "label_descriptions", `has ${descriptions.length} entries for ${labels.length} labels`);
  }
  const seen = new Map<string, number>();
  labels.forEach((label, i) => {
    const key = labelKey(label);
    const j = seen.get(key);
    if (j !== undefined) throw fail("relation.labels", `labels[${i}]`, `"${label}" looks like label ${j}, "${labels[j]}"`);
    seen.set(key, i);
  });
  if ("k" in dims) {
    const { C, k, D } = dims as Required<Dims>;
    if (k! > D!) throw fail("relation.subspace", "subspace.projection", `has ${k} rows, more than the embedding size ${D}`);
    if (C! * k! * D! > SCHEMA.max_work) throw fail("relation.work", "subspace.projection", `makes C x k x D = ${C! * k! * D!}, over 2^30`);
  }
}

/**
 * The head's own relations, after the pure releases': its noise scale, clip and sensitivity,
 * then the contract's bound on its epsilon (relation "accountant", src/accounting.ts).
 */
function headRelations(h: HeadRelease): void {
  const needs = h.noise_multiplier * h.sensitivity_l2;
  if (!isClose(h.noise_scale, needs)) {
    throw fail("relation.noise_scale", "releases.head.noise_scale",
      `is ${h.noise_scale}, but noise multiplier ${h.noise_multiplier} at sensitivity ${h.sensitivity_l2} needs ${needs}`);
  }
  const one = roundHalfEven(h.grid * h.clip_l2);
  if (one < 1n) throw fail("relation.clip", "releases.head.clip_l2", `is ${h.clip_l2}: less than one grid step of 1/${h.grid}`);
  if (BigInt(h.sensitivity_l2) !== one) {
    throw fail("relation.sensitivity", "releases.head.sensitivity_l2",
      `is ${h.sensitivity_l2}, but a head clipped at ${h.clip_l2} on a grid of ${h.grid} has ${one}`);
  }
  const bound = headEpsilon(h.noise_multiplier, h.sample_rate, h.steps, h.delta);
  if (bound > h.epsilon * (1.0 + ACCOUNTANT_RTOL)) {
    throw fail("relation.accountant", "releases.head.epsilon", `is ${h.epsilon}, but ${h.steps} steps at noise multiplier ` +
      `${h.noise_multiplier} and sample rate ${h.sample_rate} are only (${bound}, ${h.delta})-DP`);
  }
}

/** The relations of the encoder, in the file that holds it (a bundle, or an encoder pack). */
function encoderRelations(v: Map<string, Decoded>, doc: ValueMap): void {
  let squares = 0;
  for (const x of v.get("encoder.check_embedding") as Float32Array) squares += x * x;
  const norm = Math.sqrt(squares);
  if (!(norm > SCHEMA.check_norm[0] && norm < SCHEMA.check_norm[1])) {
    throw fail("relation.check", "encoder.check_embedding", `has norm ${norm.toPrecision(4)}, not a unit vector`);
  }
  if (v.has("encoder.weights")) {
    const top = [...doc.keys()];
    const enc = [...(doc.get("encoder") as ValueMap).keys()];
    if (top[top.length - 2] !== "encoder" || enc[enc.length - 1] !== "weights") {
      throw fail("relation.weights", "encoder.weights", "must be the last entry of encoder, the last map before sha256");
    }
  }
}

/** The checked encoder of a file: its tokenizer and model families, then its spec. */
function encoder(v: Map<string, Decoded>): EncoderSpec {
  const get = <T>(path: string): T | null => (v.get(path) as T | undefined) ?? null;
  const tokenizer = checkTokenizerJson(v.get("encoder.tokenizer_json") as string);
  const format = v.get("encoder.format") as EncoderFormat;
  const weights = get<Uint8Array>("encoder.weights") ?? new Uint8Array(0);
  const family = get<EncoderFamily>("encoder.family") ?? DEFAULT_FAMILY;
  checkModel(format, v.get("encoder.model") as Uint8Array, weights.length, family);
  return {
    format, family, weights, tokenizer,
    model: v.get("encoder.model") as Uint8Array,
    tokenizerJson: v.get("encoder.tokenizer_json") as string,
    maxLength: Number(v.get("encoder.max_length")),
    dim: Number(v.get("encoder.dim")),
    textPrefix: v.get("encoder.text_prefix") as string,
    inputs: v.get("encoder.inputs") as string[],
    output: v.get("encoder.output") as string,
    checkText: v.get("encoder.check_text") as string,
    checkEmbedding: v.get("encoder.check_embedding") as Float32Array,
    facts: get<ValueMap>("encoder.facts"),
  };
}

function decode(doc: ValueMap, ver: [number, number], data: Uint8Array, pack: EncoderPack | undefined): Bundle {
  const [v, dims] = fields(doc, ver, data, FIELDS, pack);
  const get = <T>(path: string): T | null => (v.get(path) as T | undefined) ?? null;
  const releases: ReleaseFacts[] = SCHEMA.statistics.filter((name) => v.has(`releases.${name}`)).map((name) => {
    const p = `releases.${name}.`;
    const grid = get<bigint>(p + "grid");
    return {
      statistic: name, epsilon: v.get(p + "epsilon") as number, sensitivity_l1: Number(v.get(p + "sensitivity_l1")),
      noise_scale: v.get(p + "noise_scale") as number, mechanism: v.get(p + "mechanism") as string,
      ...(grid === null ? {} : { grid: Number(grid), clip_l1: v.get(p + "clip_l1") as number }),
    };
  });
  const head = v.has("releases.head") ? headOf(v) : null;
  relations(v, dims, releases, head, doc);
  if (pack === undefined) encoderRelations(v, doc);
  const scoring = v.has("scoring") ? Object.fromEntries(["centroid_temperature", "prior_temperature",
    "prior_records_per_class", "description_pull"].map((k) => [k, v.get(`scoring.${k}`) as number])) as unknown as Scoring : null;
  return {
    version: ver,
    labels: v.get("labels") as string[],
    labelDescriptions: get<string[]>("label_descriptions"),
    privacy: v.get("privacy") as ValueMap,
    epsilon: v.get("privacy.epsilon") as number,
    delta: v.get("privacy.delta") as number,
    recordsPerUnit: Number(v.get("privacy.max_records_per_unit")),
    batches: Number(get<bigint>("privacy.batches") ?? 1n),
    releases: Object.fromEntries(releases.map((r) => [r.statistic, r])),
    encoder: pack?.encoder ?? encoder(v),
    dims: { C: dims["C"]!, D: dims["D"]!, k: dims["k"] ?? 0, T: dims["T"] ?? 0, H: dims["H"] ?? 0 },
    classCounts: get("releases.class_counts.values"),
    classSums: get("releases.class_sums.values"),
    origin: get("subspace.origin"),
    projection: get("subspace.projection"),
    votes: get("releases.votes.values"),
    unitCount: v.has("releases.unit_count.value") ? Number(v.get("releases.unit_count.value")) : null,
    hyperplanes: get("hashing.hyperplanes"),
    offsets: get("hashing.offsets"),
    seed: get("hashing.seed"),
    prior: get("prior"),
    scoring,
    exporter: get("exporter"),
    requires: get<string[]>("requires"),
    encoderPack: pack?.digest ?? null,
    head,
  };
}

/** The head release's checked values (1.1; the reader has read every field of releases.head). */
function headOf(v: Map<string, Decoded>): HeadRelease {
  const at = <T>(key: string): T => v.get(`releases.head.${key}`) as T;
  return {
    epsilon: at("epsilon"), delta: at("delta"), sensitivity_l2: Number(at<bigint>("sensitivity_l2")),
    noise_scale: at("noise_scale"), noise_multiplier: at("noise_multiplier"), sample_rate: at("sample_rate"),
    steps: Number(at<bigint>("steps")), grid: Number(at<bigint>("grid")), clip_l2: at("clip_l2"),
    accountant: at("accountant"), mechanism: at("mechanism"),
    origin: at("origin"), weights: at("weights"), bias: at("bias"),
  };
}

/** The bytes as a copy of their own, so a caller that reuses its buffer cannot change a file between the checks and the engine. */
const copy = (bytes: Uint8Array | ArrayBuffer): Uint8Array =>
  bytes instanceof Uint8Array ? new Uint8Array(bytes) : new Uint8Array(bytes.slice(0));

export interface ReadOptions {
  /** The encoder pack (from `readPack`) a statistics bundle names; only such a bundle may be given one. */
  readonly pack?: EncoderPack;
}

/**
 * Parse and validate bundle bytes (a statistics bundle with the encoder pack it names: its
 * encoder is then the pack's). The bytes are copied first.
 */
export async function readBundle(bytes: Uint8Array | ArrayBuffer, options: ReadOptions = {}): Promise<Bundle> {
  const { pack } = options;
  if (pack !== undefined && !PACK_VALUES.has(pack)) throw new TypeError("readBundle: options.pack must come from readPack");
  const data = copy(bytes);
  const doc = await readContainer(data);
  const ver = version(doc, SCHEMA.format);
  requires(doc, data);
  namedPack(doc, data, pack);
  return decode(doc, ver, data, pack);
}

export interface PackOptions {
  /** The SHA-256 digests (hex) the application accepts; any other pack is refused (pack.untrusted) before it is parsed. */
  readonly expect?: Iterable<string>;
}

/**
 * Parse and validate encoder pack bytes (1.1): the container, the digest the application
 * expects, the version, the pack's fields (its encoder, checked as a bundle's), unknown keys,
 * the encoder's relations, the tokenizer family and the model family. The bytes are copied first.
 */
export async function readPack(bytes: Uint8Array | ArrayBuffer, options: PackOptions = {}): Promise<EncoderPack> {
  const data = copy(bytes);
  const digest = await checkDigest(data, SCHEMA.pack_format);
  const { expect } = options;
  if (expect !== undefined) {
    // Hex in either case (ASCII A-F: no platform case mapping, which this runtime never uses).
    const lower = (e: string): string => e.replace(/[A-F]/g, (c) => String.fromCharCode(c.charCodeAt(0) + 32));
    const accepted = new Set((typeof expect === "string" ? [expect] : [...expect]).map(lower));
    if (!accepted.has(hex(digest))) {
      throw new BundleError("pack.untrusted", "", `encoder pack ${hex(digest).slice(0, 16)}... is not one of the ${accepted.size} ` +
        "this application accepts");
    }
  }
  const doc = readSealed(data);
  const [v] = fields(doc, version(doc, SCHEMA.pack_format), data, PACK_FIELDS);
  encoderRelations(v, doc);
  const pack: EncoderPack = Object.freeze({ digest, sha256: hex(digest), encoder: encoder(v) });
  PACK_VALUES.set(pack, new Map([...v].filter(([path]) => path.split(".")[0] === "encoder")));
  return pack;
}
