/**
 * The model family (schema.json "families", "onnx", "tflite"): what an encoder's ONNX or TFLite
 * bytes may contain, checked before any engine sees them. An engine runs whatever graph it is
 * given (an ONNX Loop of 1e12 iterations hangs the load, external data could name any file, a
 * custom operator runs code), so only the exporter's families are accepted: the encoder's
 * family (encoder.family, 1.2; absent: bert) in a format it lists (mpnet: ONNX only), the
 * operators of FAMILY_ONNX_OPS (the common onnx.ops and the family's own) or TFLITE_OPS, no
 * subgraphs, no functions or training graphs, no sparse tensors, and ONNX external data only in
 * initializers and only in the bundle's form (the 256-byte placeholder location, 20-digit offset
 * and length inside encoder.weights). The protobuf and flatbuffer walks bound every length
 * against the bytes present. Every refusal is model.family at encoder.model.
 */
import { decodeUtf8 } from "./container.js";
import { SCHEMA } from "./contract.js";
import { BundleError } from "./errors.js";

const { max_nodes: MAX_ONNX_NODES, number_digits: NUMBER_DIGITS } = SCHEMA.onnx;
const ONNX_DOMAINS = SCHEMA.onnx.domains;
/** The family an encoder without encoder.family belongs to (every 1.0 and 1.1 encoder). */
export const DEFAULT_FAMILY = "bert";
/** Each encoder family's formats, and its ONNX operators as "domain\0op": the common set and its own. */
const FAMILY_FORMATS = new Map(Object.entries(SCHEMA.families).map(([name, f]) => [name, f.formats]));
const FAMILY_ONNX_OPS = new Map(Object.entries(SCHEMA.families).map(([name, f]) =>
  [name, new Set([...SCHEMA.onnx.ops, ...f.onnx_ops].map(([domain, op]) => `${domain}\0${op}`))]));
const WEIGHTS_LOCATION = SCHEMA.onnx.weights_location.padEnd(SCHEMA.onnx.weights_location_bytes, ".");
const TFLITE_OPS = new Set(Object.values(SCHEMA.tflite.ops));
const MAX_TFLITE_OPERATORS = SCHEMA.tflite.max_operators;
/** The operator inputs an encoder may leave out (-1), by operator code: those its kernel treats as optional. */
const TFLITE_OPTIONAL_INPUTS = new Map(Object.entries(SCHEMA.tflite.optional_inputs).map(([name, positions]) =>
  [SCHEMA.tflite.ops[name]!, new Set(positions)]));
const TFLITE_NAMES = new Map(Object.entries(SCHEMA.tflite.ops).map(([name, code]) => [code, name]));

/** The model is malformed or outside the family (one code, model.family, at encoder.model). */
class Bad extends Error {}

type Int = number | bigint;

// --------------------------------------------------------------------------- ONNX (protobuf)
// Field numbers of onnx.proto.
const [MODEL_GRAPH, MODEL_OPSET, MODEL_TRAINING, MODEL_FUNCTIONS, OPSET_DOMAIN] = [7, 8, 20, 25, 1];
const [GRAPH_NODE, GRAPH_INITIALIZER, GRAPH_SPARSE, NODE_INPUT, NODE_OP_TYPE, NODE_ATTRIBUTE, NODE_DOMAIN] = [1, 5, 15, 1, 4, 5, 7];
/** The node inputs an encoder may leave out (an empty name), by "domain\0op": those the kernel takes as optional. */
const ONNX_OPTIONAL_INPUTS = new Map(SCHEMA.onnx.optional_inputs.map(([domain, op, positions]) =>
  [`${domain}\0${op}`, new Set(positions)]));
const [ATTR_T, ATTR_G, ATTR_TENSORS, ATTR_GRAPHS, ATTR_SPARSE, ATTR_SPARSES] = [5, 6, 10, 11, 22, 23];
const [TENSOR_RAW_DATA, TENSOR_EXTERNAL_DATA, TENSOR_DATA_LOCATION, EXTERNAL] = [9, 13, 14, 1];

/** A varint and the position after it; exact beyond 2^53 (as bigint), at most 10 bytes. */
function varint(buf: Uint8Array, pos: number, end: number): [Int, number] {
  let value = 0;
  let big: bigint | null = null;
  let shift = 0;
  for (;;) {
    if (pos >= end) throw new Bad(`varint cut short at byte ${pos}`);
    const b = buf[pos]!;
    pos += 1;
    if (big === null && shift < 49) value += (b & 0x7f) * 2 ** shift;
    else big = (big ?? BigInt(value)) | (BigInt(b & 0x7f) << BigInt(shift));
    if (!(b & 0x80)) return [big ?? value, pos];
    shift += 7;
    if (shift >= 70) throw new Bad(`varint longer than 10 bytes at byte ${pos}`);
  }
}

/** (field number, wire type, value start, value end or varint value) of one message's fields. */
function* fields(buf: Uint8Array, start: Int, end: Int): Generator<[number, number, Int, Int]> {
  let pos = Number(start);
  const stop = Number(end);
  if (!(start < end)) return;
  while (pos < stop) {
    let key: Int;
    [key, pos] = varint(buf, pos, stop);
    const field = Number(BigInt(key) >> 3n);
    const wire = Number(BigInt(key) & 7n);
    if (field === 0) throw new Bad(`field number 0 at byte ${pos}`);
    if (wire === 0) {
      let value: Int;
      [value, pos] = varint(buf, pos, stop);
      yield [field, wire, value, value];
    } else if (wire === 1 || wire === 5) {
      const size = wire === 1 ? 8 : 4;
      if (pos + size > stop) throw new Bad(`fixed-size field cut short at byte ${pos}`);
      yield [field, wire, pos, pos + size];
      pos += size;
    } else if (wire === 2) {
      let size: Int;
      [size, pos] = varint(buf, pos, stop);
      if (size > stop - pos) throw new Bad(`length ${size} at byte ${pos} runs past the end of its message`);
      yield [field, wire, pos, pos + Number(size)];
      pos += Number(size);
    } else {
      throw new Bad(`wire type ${wire} at byte ${pos}`);
    }
  }
}

function* messages(buf: Uint8Array, start: Int, end: Int, field: number): Generator<[number, number]> {
  for (const [f, wire, a, b] of fields(buf, start, end)) {
    if (f === field) {
      if (wire !== 2) throw new Bad(`field ${field} has wire type ${wire}, expected a message`);
      yield [Number(a), Number(b)];
    }
  }
}

/** The last occurrence of a string field (protobuf's rule for singular scalars), "" if absent. */
function string(buf: Uint8Array, start: Int, end: Int, field: number): string {
  let value: Uint8Array = new Uint8Array(0);
  for (const [a, b] of messages(buf, start, end, field)) value = buf.subarray(a, b);
  const text = decodeUtf8(value);
  if (text === null) throw new Bad(`field ${field} is not UTF-8`);
  return text;
}

/** A StringStringEntryProto: its key and value (each once). */
function entry(buf: Uint8Array, start: Int, end: Int): [string, string] {
  const found = new Map<number, [number, number]>();
  for (const [f, wire, a, b] of fields(buf, start, end)) {
    if (f === 1 || f === 2) {
      if (wire !== 2 || found.has(f)) throw new Bad("an external-data entry repeats its key or value, or is not a string");
      found.set(f, [Number(a), Number(b)]);
    }
  }
  if (found.size !== 2) throw new Bad("an external-data entry lacks its key or value");
  const [key, value] = [1, 2].map((f) => decodeUtf8(buf.subarray(...found.get(f)!)));
  if (key === null || value === null) throw new Bad("an external-data entry is not UTF-8");
  return [key!, value!];
}

/** An inline tensor, or an initializer whose data is in encoder.weights in exactly the bundle's form. */
function onnxTensor(buf: Uint8Array, start: Int, end: Int, what: string, refs: [bigint, bigint][] | null): void {
  const entries: [string, string][] = [];
  let external = false;
  let raw = false;
  for (const [f, wire, a, b] of fields(buf, start, end)) {
    if (f === TENSOR_EXTERNAL_DATA) entries.push(entry(buf, a, b));
    else if (f === TENSOR_DATA_LOCATION && wire === 0 && a == EXTERNAL) external = true; // eslint-disable-line eqeqeq
    raw = raw || f === TENSOR_RAW_DATA;
  }
  if (!entries.length && !external) return;
  if (refs === null) throw new Bad(`${what} keeps its data outside the graph, which only initializers may`);
  const keys = entries.map((e) => e[0]);
  if (!external || raw || keys.join("\0") !== "location\0offset\0length") {
    throw new Bad(`${what} has external data that is not exactly location, offset, length (data_location EXTERNAL)`);
  }
  const [[, location], [, offset], [, length]] = entries as [[string, string], [string, string], [string, string]];
  const digits = (x: string): boolean => x.length === NUMBER_DIGITS && /^[0-9]+$/.test(x);
  if (location !== WEIGHTS_LOCATION || !digits(offset) || !digits(length)) {
    throw new Bad(`${what} names external data other than the weights placeholder at ${NUMBER_DIGITS}-digit offsets`);
  }
  refs.push([BigInt(offset), BigInt(length)]);
}

function onnxGraph(buf: Uint8Array, start: Int, end: Int, counts: number[], refs: [bigint, bigint][], ops: Set<string>): void {
  for (const [f, wire, a, b] of fields(buf, start, end)) {
    if (f === GRAPH_NODE || f === GRAPH_INITIALIZER || f === GRAPH_SPARSE) {
      counts[0]! += 1;
      if (counts[0]! > MAX_ONNX_NODES) throw new Bad(`the graph has more than ${MAX_ONNX_NODES} nodes and initializers`);
      if (wire !== 2) throw new Bad(`graph field ${f} has wire type ${wire}, expected a message`);
    }
    if (f === GRAPH_SPARSE) throw new Bad("the graph has a sparse initializer (the encoder family has none)");
    if (f === GRAPH_INITIALIZER) onnxTensor(buf, a, b, "an initializer", refs);
    else if (f === GRAPH_NODE) onnxNode(buf, a, b, ops);
  }
}

function onnxNode(buf: Uint8Array, start: Int, end: Int, ops: Set<string>): void {
  const op = string(buf, start, end, NODE_OP_TYPE);
  const domain = string(buf, start, end, NODE_DOMAIN);
  if (!ops.has(`${domain}\0${op}`) && !ops.has(`${domain === "ai.onnx" ? "" : domain}\0${op}`)) {
    const shown = domain ? `${domain}.${op}` : op;
    throw new Bad(`operator "${shown.slice(0, 80)}" is not one the encoder family uses`);
  }
  for (const [a, b] of messages(buf, start, end, NODE_ATTRIBUTE)) {
    for (const [f, , x, y] of fields(buf, a, b)) {
      if (f === ATTR_G || f === ATTR_GRAPHS) {
        throw new Bad(`operator "${op}" has a subgraph attribute (control flow is not in the family)`);
      }
      if (f === ATTR_SPARSE || f === ATTR_SPARSES) throw new Bad(`operator "${op}" has a sparse tensor attribute`);
      if (f === ATTR_T || f === ATTR_TENSORS) onnxTensor(buf, x, y, `an attribute tensor of operator "${op}"`, null);
    }
  }
  const optional = ONNX_OPTIONAL_INPUTS.get(`${domain === "ai.onnx" ? "" : domain}\0${op}`) ?? new Set<number>();
  let position = 0;
  for (const [f, wire, a, b] of fields(buf, start, end)) {
    if (f !== NODE_INPUT) continue;
    if (wire === 2 && a === b && !optional.has(position)) {
      throw new Bad(`operator "${op}" leaves its input ${position} out (an empty name), which the encoder family allows only for ` +
        SCHEMA.onnx.optional_inputs.map(([, o, p]) => `${o}'s input ${[...p].sort((x, y) => x - y).join(" or ")}`).join(", "));
    }
    position += 1;
  }
}

/**
 * Refuse ONNX bytes outside the encoder family `family` (its operators: the common set and its
 * own); `weightsBytes` is the length of encoder.weights.
 */
export function checkOnnx(model: Uint8Array, weightsBytes: number, family: string = DEFAULT_FAMILY): void {
  const ops = FAMILY_ONNX_OPS.get(family);
  if (ops === undefined) throw new Bad(`"${family.slice(0, 80)}" is not an encoder family`);
  const refs: [bigint, bigint][] = [];
  let graphs = 0;
  const counts = [0];
  for (const [f, wire, a, b] of fields(model, 0, model.length)) {
    if (f === MODEL_FUNCTIONS) throw new Bad("the model defines its own functions (the encoder family has none)");
    if (f === MODEL_TRAINING) throw new Bad("the model carries training graphs (the encoder family has none)");
    if (f === MODEL_OPSET) {
      if (wire !== 2) throw new Bad(`opset_import has wire type ${wire}`);
      const domain = string(model, a, b, OPSET_DOMAIN);
      if (!ONNX_DOMAINS.includes(domain)) {
        throw new Bad(`operator set domain "${domain.slice(0, 80)}" is not one the encoder family uses`);
      }
    }
    if (f === MODEL_GRAPH) {
      if (wire !== 2) throw new Bad(`graph has wire type ${wire}`);
      graphs += 1;
      onnxGraph(model, a, b, counts, refs, ops);
    }
  }
  if (graphs !== 1) throw new Bad(`it has ${graphs} graphs, not one`);
  for (const [offset, length] of refs) {
    if (offset + length > BigInt(weightsBytes)) {
      throw new Bad(`an initializer's external data ends at byte ${offset + length}, past the ${weightsBytes} ` +
        "bytes of encoder.weights");
    }
  }
}

// --------------------------------------------------------------------------- TFLite (flatbuffer)
// Table field indices of tensorflow/lite/schema/schema.fbs.
const [M_OPCODES, M_SUBGRAPHS, M_BUFFERS, M_SIGNATURES, OC_DEPRECATED, OC_CUSTOM, OC_BUILTIN] = [1, 2, 4, 7, 0, 1, 3];
const [SG_TENSORS, SG_INPUTS, SG_OUTPUTS, SG_OPERATORS, T_NAME, B_OFFSET, B_SIZE] = [0, 1, 2, 3, 3, 1, 2];
const [OP_OPCODE_INDEX, OP_INPUTS, OP_OUTPUTS] = [0, 1, 2];
const [SIG_INPUTS, SIG_OUTPUTS, SIG_KEY, TM_NAME] = [0, 1, 2, 0];
const { max_operator_codes: MOST_CODES, max_subgraphs: MOST_SUBGRAPHS, max_signatures: MOST_SIGNATURES,
  max_signature_tensors: MOST_SIGNATURE_TENSORS } = SCHEMA.tflite;

/** Bounds-checked reads of a flatbuffer: every offset and length is checked against the bytes. */
class Flat {
  readonly n: number;
  private readonly view: DataView;
  /** Bytes of strings and index vectors read so far: many tables may share one, so the walk reads at most the model's size. */
  private read = 0;

  constructor(private readonly b: Uint8Array) {
    this.n = b.length;
    this.view = new DataView(b.buffer, b.byteOffset, b.byteLength);
  }

  u(kind: "I" | "i" | "H" | "b" | "Q", pos: number): number | bigint {
    const size = { I: 4, i: 4, H: 2, b: 1, Q: 8 }[kind];
    if (!(pos >= 0 && pos <= this.n - size)) throw new Bad(`offset ${pos} is outside the ${this.n} bytes`);
    switch (kind) {
      case "I": return this.view.getUint32(pos, true);
      case "i": return this.view.getInt32(pos, true);
      case "H": return this.view.getUint16(pos, true);
      case "b": return this.view.getInt8(pos);
      default: return this.view.getBigUint64(pos, true);
    }
  }

  root(): number {
    return this.u("I", 0) as number;
  }

  /** Absolute position of a table's field, null when absent. */
  field(table: number, index: number): number | null {
    const vtable = table - (this.u("i", table) as number);
    const vsize = this.u("H", vtable) as number;
    if (vsize < 4 || vsize % 2) throw new Bad(`vtable at ${vtable} has size ${vsize}`);
    if (4 + 2 * index >= vsize) return null;
    const rel = this.u("H", vtable + 4 + 2 * index) as number;
    return rel === 0 ? null : table + rel;
  }

  ref(pos: number): number {
    return pos + (this.u("I", pos) as number);
  }

  scalar(table: number, index: number, kind: "I" | "i" | "b" | "Q"): number | bigint {
    const at = this.field(table, index);
    return at === null ? (kind === "Q" ? 0n : 0) : this.u(kind, at);
  }

  /** (position of the first element, length); a length the bytes cannot hold is refused. */
  vector(table: number, index: number, elem = 4): [number, number] {
    const at = this.field(table, index);
    if (at === null) return [0, 0];
    const vec = this.ref(at);
    const length = this.u("I", vec) as number;
    if (length > Math.floor((this.n - vec - 4) / elem)) {
      throw new Bad(`vector at ${vec} declares ${length} elements, more than its bytes hold`);
    }
    return [vec + 4, length];
  }

  /** The tables of a vector field, refused past `most` before any is read. */
  tables(table: number, index: number, most: number, what: string): number[] {
    const [first, length] = this.vector(table, index);
    if (length > most) throw new Bad(`it has ${length} ${what}, more than the family allows (${most})`);
    const out: number[] = [];
    for (let i = 0; i < length; i++) out.push(this.ref(first + 4 * i));
    return out;
  }

  /** An int32 vector field (empty when absent); like strings, vectors may be shared, so the walk reads at most the model's size of them. */
  ints(table: number, index: number): number[] {
    const [first, length] = this.vector(table, index);
    this.read += 4 * length;
    if (this.read > this.n) throw new Bad("its names and index vectors add up to more bytes than the model has (shared many times)");
    return Array.from({ length }, (_, i) => this.view.getInt32(first + 4 * i, true));
  }

  string(table: number, index: number): Uint8Array | null {
    const at = this.field(table, index);
    if (at === null) return null;
    const s = this.ref(at);
    const length = this.u("I", s) as number;
    this.read += length;
    if (this.read > this.n) throw new Bad("its names add up to more bytes than the model has (strings shared many times)");
    if (length > this.n - s - 4) throw new Bad(`string at ${s} declares ${length} bytes, more than there are`);
    return this.b.subarray(s + 4, s + 4 + length);
  }
}

function utf8Name(raw: Uint8Array | null, what: string): void {
  if (raw !== null && decodeUtf8(raw) === null) throw new Bad(`${what} is not UTF-8`);
}

/**
 * None of the fields of `kind` (a schema.fbs table) the family's encoders never write
 * (schema.json "absent_fields": variable and sparse tensors, custom options).
 */
function absent(fb: Flat, table: number, kind: "Tensor" | "Operator"): void {
  for (const [name, index] of Object.entries(SCHEMA.tflite.absent_fields[kind])) {
    if (fb.field(table, index) !== null) throw new Bad(`one of its ${kind} tables has the field ${name}, which the encoder family does not use`);
  }
}

/** Each index names one of the subgraph's `tensors`, or is -1 at a position in `optional`. */
function tensorIndices(indices: readonly number[], tensors: number, what: string, optional: ReadonlySet<number>): void {
  indices.forEach((i, position) => {
    if (i === -1 && optional.has(position)) return;
    if (i === -1) {
      throw new Bad(`${what} ${position} is left out (-1), which the encoder family allows only for ` +
        [...TFLITE_OPTIONAL_INPUTS].map(([code, p]) => `${TFLITE_NAMES.get(code)}'s input ${[...p].sort((a, b) => a - b).join(" or ")}`).join(", "));
    }
    if (!(i >= 0 && i < tensors)) throw new Bad(`${what} ${position} names tensor ${i} of ${tensors}`);
  });
}

/** Refuse TFLite bytes outside the encoder family. */
export function checkTflite(model: Uint8Array): void {
  const fb = new Flat(model);
  if (fb.n < 8) throw new Bad(`${fb.n} bytes cannot hold a flatbuffer`);
  const root = fb.root();
  const codes: number[] = [];
  for (const oc of fb.tables(root, M_OPCODES, MOST_CODES, "operator codes")) {
    if (fb.string(oc, OC_CUSTOM) !== null) {
      throw new Bad("it uses a custom operator");
    }
    const code = Math.max(fb.scalar(oc, OC_DEPRECATED, "b") as number, fb.scalar(oc, OC_BUILTIN, "i") as number);
    if (!TFLITE_OPS.has(code)) throw new Bad(`builtin operator code ${code} is not one the encoder family uses`);
    codes.push(code);
  }
  const subgraphs = fb.tables(root, M_SUBGRAPHS, MOST_SUBGRAPHS, "subgraphs");
  if (subgraphs.length !== 1) {
    throw new Bad(`it has ${subgraphs.length} subgraphs; the encoder family has one (control flow needs more)`);
  }
  const sg = subgraphs[0]!;
  const tensors = fb.tables(sg, SG_TENSORS, 2 * MAX_TFLITE_OPERATORS, "tensors");
  for (const t of tensors) {
    utf8Name(fb.string(t, T_NAME), "a tensor name");
    absent(fb, t, "Tensor");
  }
  const none = new Set<number>();
  tensorIndices(fb.ints(sg, SG_INPUTS), tensors.length, "the subgraph's input", none);
  tensorIndices(fb.ints(sg, SG_OUTPUTS), tensors.length, "the subgraph's output", none);
  for (const op of fb.tables(sg, SG_OPERATORS, MAX_TFLITE_OPERATORS, "operators")) {
    const index = fb.scalar(op, OP_OPCODE_INDEX, "I") as number;
    if (index >= codes.length) throw new Bad(`an operator names operator code ${index} of ${codes.length}`);
    const code = codes[index]!;
    absent(fb, op, "Operator");
    tensorIndices(fb.ints(op, OP_INPUTS), tensors.length, `${TFLITE_NAMES.get(code)}'s input`, TFLITE_OPTIONAL_INPUTS.get(code) ?? none);
    tensorIndices(fb.ints(op, OP_OUTPUTS), tensors.length, `${TFLITE_NAMES.get(code)}'s output`, none);
  }
  for (const buffer of fb.tables(root, M_BUFFERS, 2 * MAX_TFLITE_OPERATORS + 1, "buffers")) {
    if (fb.scalar(buffer, B_OFFSET, "Q") !== 0n || fb.scalar(buffer, B_SIZE, "Q") !== 0n) {
      throw new Bad("a buffer is stored outside the flatbuffer (the encoder family keeps all inside)");
    }
  }
  for (const sig of fb.tables(root, M_SIGNATURES, MOST_SIGNATURES, "signatures")) {
    utf8Name(fb.string(sig, SIG_KEY), "a signature key");
    for (const index of [SIG_INPUTS, SIG_OUTPUTS]) {
      for (const tm of fb.tables(sig, index, MOST_SIGNATURE_TENSORS, "signature tensors")) {
        utf8Name(fb.string(tm, TM_NAME), "a signature tensor name");
      }
    }
  }
}

/**
 * The family check for a bundle's encoder format ("onnx" or "tflite") and family (1.2; absent:
 * bert): a format the family does not list is refused before the model is parsed. BundleError
 * model.family at encoder.model.
 */
export function checkModel(format: string, model: Uint8Array, weightsBytes: number, family: string = DEFAULT_FAMILY): void {
  if (!FAMILY_FORMATS.get(family)?.includes(format)) {
    throw new BundleError("model.family", "encoder.model",
      `encoder.model is outside the encoder families: the ${family.slice(0, 80)} family has no ${format.slice(0, 80)} form`);
  }
  try {
    if (format === "onnx") checkOnnx(model, weightsBytes, family);
    else checkTflite(model);
  } catch (e) {
    if (e instanceof Bad) throw new BundleError("model.family", "encoder.model", `encoder.model is not a ${format} model of the encoder family: ${e.message}`);
    throw e;
  }
}
