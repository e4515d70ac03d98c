/**
 * MatMulNBits for onnxruntime-web: rewritten once, at load, into operators its WebAssembly build
 * runs fast, instead of unpacking the weights on every run.
 *
 * onnxruntime's CPU kernel of MatMulNBits (contrib_ops/cpu/quantization/matmul_nbits.cc) runs
 * its int8 GEMM only where MLAS has a QNBitGemm kernel (x86-64 with AVX2 or later, ARM64, RISC-V).
 * onnxruntime-web's WebAssembly build has none, so the kernel takes its fallback,
 * ComputeBUnpacked: on every run it dequantizes the whole weight matrix B into a K x N float
 * buffer (MlasDequantizeBlockwise: (q - zero point) * scale) and multiplies with a float GEMM.
 * For the MiniLM encoder that is 10.6 M weights unpacked per run whatever the text's length:
 * most of a short text's time in a browser (docs/web.md, "Speed and size").
 *
 * `lowerMatMulNBits` rewrites, in memory, each MatMulNBits it can into a MatMul on a float
 * initializer holding the same dequantized values, computed here once with the kernel's formula
 * (an integer times a float32 scale, rounded once to float32: the same float32 values). The
 * bundle's bytes, its encoder's weights and the contract do not change; the engine multiplies by
 * the same matrix, which its MatMul kernel packs once at session creation instead of unpacking it
 * per run. The price is memory: the float weights take 4 bytes per weight where B took one.
 *
 * With `kernel: "int8"` each MatMulNBits becomes instead what onnxruntime's native kernel computes
 * at accuracy_level 4 (the bundle's encoders' level, what the Python and Java readers run):
 * activations quantized to int8 per row in blocks of block_size along K, each block multiplied in
 * integers by B's own integers, scaled by the two blocks' scales and added. The operators are ones
 * onnxruntime-web's CPU kernels register (MatMulIntegerToFloat of com.microsoft, whose A is uint8
 * only, its A scale per row applied after the GEMM and its B prepacked once when B is 2-D: hence
 * one 2-D B per block rather than one 3-D B), and the weights stay one byte each. Closer to the
 * other readers' embeddings than the float path, and faster on long texts (docs/web.md).
 *
 * Lowered: `bits` 8, inputs A, B and scales only (no zero points, g_idx or bias), B uint8
 * [N, ceil(K / block_size), block_size] and scales float32 with N * ceil(K / block_size) values,
 * B's and the scales' data in the model's external data (the bundle's form) or inline. Any other
 * MatMulNBits is left as it is (correct, as slow as before). The model has already passed the
 * family check (model_family.ts): every length is still checked against the bytes present.
 */

/**
 * What each lowerable MatMulNBits becomes: "float32", a MatMul on float weights dequantized once;
 * "int8", integer maths on the same 8-bit weights (above); a node the int8 form cannot take
 * (a K past one block that is not a multiple of block_size, more than one output, a model whose
 * ONNX opset is before 13) gets the float form.
 */
export type LowerKernel = "float32" | "int8";

/** The lowered model, the external data its new initializers name, and how many nodes were lowered. */
export interface Lowered {
  readonly model: Uint8Array;
  /** The new initializers' data (float weights, int8 weights and their scales), under `LOWERED_LOCATION`. */
  readonly data: Uint8Array;
  /** MatMulNBits nodes rewritten, and of them how many in int8. */
  readonly nodes: number;
  readonly int8: number;
}

/** Where the lowered model's new initializers keep their data (an externalData path). */
export const LOWERED_LOCATION = "dpedge-matmulnbits-lowered";

/**
 * The most weights a rewrite makes (bytes, float and int8 together): a bundle travels, and a crafted
 * one could name one large B with many scales, each its own copy. Past it the model goes to the
 * engine as it is (correct, as slow as before). MiniLM's encoder needs 42 MB in float32 and 10.9 MB
 * in int8; the laptop tier's mpnet would need 340 MB in float32, past the bound, and 88 MB in int8.
 */
export const MAX_LOWERED_BYTES = 256 * 2 ** 20;

// Field numbers of onnx.proto.
const [MODEL_GRAPH, MODEL_OPSET] = [7, 8];
const [GRAPH_NODE, GRAPH_INITIALIZER, GRAPH_OUTPUT] = [1, 5, 12];
const [NODE_INPUT, NODE_OUTPUT, NODE_NAME, NODE_OP_TYPE, NODE_ATTRIBUTE, NODE_DOMAIN] = [1, 2, 3, 4, 5, 7];
const [ATTR_NAME, ATTR_I, ATTR_INTS, ATTR_TYPE] = [1, 3, 8, 20];
const [ATTR_TYPE_INT, ATTR_TYPE_INTS] = [2, 7];
const [T_DIMS, T_DATA_TYPE, T_FLOAT_DATA, T_NAME, T_RAW_DATA, T_EXTERNAL_DATA, T_DATA_LOCATION] = [1, 2, 4, 8, 9, 13, 14];
const [FLOAT, UINT8, INT8, INT64] = [1, 2, 3, 7];
const VALUE_INFO_NAME = 1;

class Unlowerable extends Error {}

interface Field { field: number; wire: number; key: number; start: number; end: number; value: number }

/** A varint and the position after it; a value past 2^49 (a negative int64, for one) reads as -1, which no check here accepts. */
function varint(buf: Uint8Array, pos: number, end: number): [number, number] {
  let value = 0;
  for (let shift = 0; ; shift += 7) {
    if (pos >= end || shift >= 70) throw new Unlowerable("a varint runs past its message");
    const b = buf[pos++]!;
    if (shift < 49) value += (b & 0x7f) * 2 ** shift;
    else if (b & 0x7f) value = -1;
    if (!(b & 0x80)) return [value, pos];
  }
}

/** A message's fields: number, wire type, where the key starts, the value's bytes (or varint value). */
function fields(buf: Uint8Array, start: number, end: number): Field[] {
  const out: Field[] = [];
  let pos = start;
  while (pos < end) {
    const key = pos;
    let tag: number;
    [tag, pos] = varint(buf, pos, end);
    const field = Math.floor(tag / 8);
    const wire = tag % 8;
    if (wire === 0) {
      let value: number;
      [value, pos] = varint(buf, pos, end);
      out.push({ field, wire, key, start: pos, end: pos, value });
    } else if (wire === 1 || wire === 5) {
      const size = wire === 1 ? 8 : 4;
      if (pos + size > end) throw new Unlowerable("a fixed-size field runs past its message");
      out.push({ field, wire, key, start: pos, end: pos + size, value: 0 });
      pos += size;
    } else if (wire === 2) {
      let size: number;
      [size, pos] = varint(buf, pos, end);
      if (size > end - pos) throw new Unlowerable("a length runs past its message");
      out.push({ field, wire, key, start: pos, end: pos + size, value: size });
      pos += size;
    } else {
      throw new Unlowerable(`wire type ${wire}`);
    }
  }
  return out;
}

const decoder = new TextDecoder();
const encoder = new TextEncoder();
const text = (buf: Uint8Array, f: Field): string => decoder.decode(buf.subarray(f.start, f.end));

// --------------------------------------------------------------------------- writing
// (also engines/warm_up.ts's, which writes its small model with them)
export function putVarint(out: number[], value: number): void {
  while (value >= 0x80) {
    out.push((value % 0x80) | 0x80);
    value = Math.floor(value / 0x80);
  }
  out.push(value);
}

/** A length-delimited field (a string, bytes or an embedded message). */
export function putBytes(out: number[], field: number, bytes: Uint8Array | readonly number[]): void {
  putVarint(out, field * 8 + 2);
  putVarint(out, bytes.length);
  for (const b of bytes) out.push(b);
}

/** A varint field. */
export function putInt(out: number[], field: number, value: number): void {
  putVarint(out, field * 8);
  putVarint(out, value);
}

export const putString = (out: number[], field: number, s: string): void => putBytes(out, field, encoder.encode(s));

// --------------------------------------------------------------------------- the model
interface Tensor { dims: number[]; type: number; data: Uint8Array | null }

/** An initializer's dims, element type and data bytes (null: in a form not read here, such as int32_data). */
function tensor(buf: Uint8Array, start: number, end: number, external: Map<string, Uint8Array>): Tensor & { name: string } {
  const dims: number[] = [];
  let type = 0;
  let name = "";
  let data: Uint8Array | null = null;
  let floats: number[] | null = null;
  const ext = new Map<string, string>();
  let isExternal = false;
  for (const f of fields(buf, start, end)) {
    if (f.field === T_DIMS) {
      if (f.wire === 0) dims.push(f.value);
      else for (let p = f.start; p < f.end;) { let d: number; [d, p] = varint(buf, p, f.end); dims.push(d); }
    } else if (f.field === T_DATA_TYPE) type = f.value;
    else if (f.field === T_NAME) name = text(buf, f);
    else if (f.field === T_RAW_DATA) data = buf.subarray(f.start, f.end);
    else if (f.field === T_FLOAT_DATA) {
      floats ??= [];
      const view = new DataView(buf.buffer, buf.byteOffset);
      for (let p = f.start; p + 4 <= f.end; p += 4) floats.push(view.getFloat32(p, true));
    } else if (f.field === T_EXTERNAL_DATA) {
      let key = "";
      let value = "";
      for (const g of fields(buf, f.start, f.end)) {
        if (g.field === 1) key = text(buf, g);
        else if (g.field === 2) value = text(buf, g);
      }
      ext.set(key, value);
    } else if (f.field === T_DATA_LOCATION) isExternal = f.value === 1;
  }
  if (isExternal) {
    const file = external.get(ext.get("location") ?? "");
    const offset = Number(ext.get("offset") ?? "0");
    const length = Number(ext.get("length") ?? "NaN");
    data = file !== undefined && Number.isSafeInteger(offset) && Number.isSafeInteger(length) && offset + length <= file.length
      ? file.subarray(offset, offset + length) : null;
  } else if (floats !== null && type === FLOAT) {
    data = new Uint8Array(Float32Array.from(floats).buffer);
  }
  return { name, dims, type, data };
}

interface NodeInfo { op: string; domain: string; inputs: string[]; outputs: string[]; name: string; ints: Map<string, number> }

function node(buf: Uint8Array, start: number, end: number): NodeInfo {
  const info: NodeInfo = { op: "", domain: "", inputs: [], outputs: [], name: "", ints: new Map() };
  for (const f of fields(buf, start, end)) {
    if (f.field === NODE_INPUT) info.inputs.push(text(buf, f));
    else if (f.field === NODE_OUTPUT) info.outputs.push(text(buf, f));
    else if (f.field === NODE_NAME) info.name = text(buf, f);
    else if (f.field === NODE_OP_TYPE) info.op = text(buf, f);
    else if (f.field === NODE_DOMAIN) info.domain = text(buf, f);
    else if (f.field === NODE_ATTRIBUTE) {
      let name = "";
      let value: number | null = null;
      for (const g of fields(buf, f.start, f.end)) {
        if (g.field === ATTR_NAME) name = text(buf, g);
        else if (g.field === ATTR_I && g.wire === 0) value = g.value;
      }
      if (value !== null) info.ints.set(name, value);
    }
  }
  return info;
}

/** Whether this MatMulNBits is lowered: its K, N, block size and number of blocks, or null. */
function lowerable(n: NodeInfo, b: Tensor | undefined, scales: Tensor | undefined): Shape | null {
  const [k, nn, bits, blockSize] = ["K", "N", "bits", "block_size"].map((a) => n.ints.get(a) ?? 0) as [number, number, number, number];
  const inputs = n.inputs.filter((x) => x !== "");
  if (bits !== 8 || inputs.length !== 3 || n.inputs.length > 3 || !(k > 0 && nn > 0 && blockSize > 0)) return null;
  if (k * nn >= 2 ** 30 || blockSize >= 2 ** 30) return null;
  if (b === undefined || scales === undefined || b.data === null || scales.data === null) return null;
  const blocks = Math.ceil(k / blockSize);
  if (b.type !== UINT8 || b.dims.join() !== [nn, blocks, blockSize].join() || b.data.length !== nn * blocks * blockSize) return null;
  if (scales.type !== FLOAT || scales.data.length !== 4 * nn * blocks) return null;
  return { k: k | 0, n: nn | 0, blockSize: blockSize | 0, blocks: blocks | 0 };
}

interface Shape { k: number; n: number; blockSize: number; blocks: number }

/** The scales as float32 (a copy: the bytes may sit at any offset). Little-endian, as WebAssembly and every browser's platform. */
function scalesOf(s: Tensor): Float32Array {
  const scale = new Float32Array(s.data!.length / 4);
  new Uint8Array(scale.buffer).set(s.data!);
  return scale;
}

/**
 * B's values as float32 into `out`, K x N row-major: (q - 128) * scale, each an integer times a
 * float32 rounded once to float32, as MlasDequantizeBlockwise computes them. B is stored column by
 * column (N, block, row in block); the copy goes by tiles of 64 x 64 so that both sides stay in cache.
 */
function dequantize(shape: Shape, b: Tensor, scales: Tensor, out: Float32Array): void {
  const { k, n: nn, blockSize, blocks } = shape;
  const stride = blocks * blockSize;
  const q = b.data!;
  const scale = scalesOf(scales);
  const TILE = 64;
  for (let blk = 0; blk < blocks; blk++) {
    const last = Math.min(k, (blk + 1) * blockSize);
    for (let k0 = blk * blockSize; k0 < last; k0 += TILE) {
      const k1 = Math.min(last, k0 + TILE);
      for (let n0 = 0; n0 < nn; n0 += TILE) {
        const n1 = Math.min(nn, n0 + TILE);
        for (let col = n0; col < n1; col++) {
          const sc = scale[col * blocks + blk]!;
          const from = col * stride;
          for (let row = k0; row < k1; row++) out[row * nn + col] = (q[from + row]! - 128) * sc;
        }
      }
    }
  }
}

/**
 * B as int8 for MatMulIntegerToFloat: `out` K x N row-major holding q - 128 (B's own integers,
 * zero point 128 taken out), and `scales` blocks x N (block by block, each block's N scales).
 * Block j's weights are then rows j * block_size to (j + 1) * block_size of `out`.
 */
function toInt8(shape: Shape, b: Tensor, s: Tensor, out: Int8Array, scales: Float32Array): void {
  const { k, n: nn, blockSize, blocks } = shape;
  const stride = blocks * blockSize;
  const q = b.data!;
  const scale = scalesOf(s);
  for (let col = 0; col < nn; col++) for (let blk = 0; blk < blocks; blk++) scales[blk * nn + col] = scale[col * blocks + blk]!;
  const TILE = 64;
  for (let k0 = 0; k0 < k; k0 += TILE) {
    const k1 = Math.min(k, k0 + TILE);
    for (let n0 = 0; n0 < nn; n0 += TILE) {
      const n1 = Math.min(nn, n0 + TILE);
      for (let col = n0; col < n1; col++) {
        const from = col * stride;
        for (let row = k0; row < k1; row++) out[row * nn + col] = q[from + row]! - 128;
      }
    }
  }
}

/** Whether the int8 form takes this node: one output, and one block or K a multiple of block_size (blocks of equal length). */
const int8able = (n: NodeInfo, shape: Shape): boolean =>
  n.outputs.length === 1 && n.outputs[0] !== "" && (shape.blocks === 1 || shape.k === shape.blocks * shape.blockSize);

/** Where an int8 weight's scales start in its data: after its K x N bytes, at a multiple of 4 (float32). */
const scalesAt = (shape: Shape): number => Math.ceil((shape.k * shape.n) / 4) * 4;

/** Options of `lowerMatMulNBits`. */
export interface LowerOptions {
  /** What each MatMulNBits becomes (default "float32"). */
  readonly kernel?: LowerKernel;
  /** The most bytes of new weights (default MAX_LOWERED_BYTES); past it, null. */
  readonly maxBytes?: number;
}

/**
 * The model with its 8-bit MatMulNBits nodes rewritten (above), or null if it has none to lower.
 * `external`: the model's external data by location (the bundle's weights).
 */
export function lowerMatMulNBits(model: Uint8Array, external: ReadonlyMap<string, Uint8Array>,
                                 options: LowerOptions = {}): Lowered | null {
  try {
    return lower(model, new Map(external), options.kernel ?? "float32", options.maxBytes ?? MAX_LOWERED_BYTES);
  } catch (e) {
    if (e instanceof Unlowerable) return null;
    throw e;
  }
}

/** The model's opset version for `domain` ("" is ONNX's), or 0. */
function opset(model: Uint8Array, top: Field[], domain: string): number {
  let version = 0;
  for (const f of top) {
    if (f.field !== MODEL_OPSET || f.wire !== 2) continue;
    let d = "";
    let v = 0;
    for (const g of fields(model, f.start, f.end)) {
      if (g.field === 1 && g.wire === 2) d = text(model, g);
      else if (g.field === 2 && g.wire === 0) v = g.value;
    }
    if (d === domain || (domain === "" && d === "ai.onnx")) version = v;
  }
  return version;
}

interface Weights {
  form: LowerKernel;
  shape: Shape;
  /** Byte offset in the data: float32 K x N, or int8 K x N followed by float32 blocks x N scales. */
  offset: number;
  bytes: number;
  b: Tensor;
  s: Tensor;
  /** The new initializers' names: float32: [weights]; int8: per block, weights then scales. */
  names: string[];
}

function lower(model: Uint8Array, external: Map<string, Uint8Array>, kernel: LowerKernel, maxBytes: number): Lowered | null {
  const top = fields(model, 0, model.length);
  const graphs = top.filter((f) => f.field === MODEL_GRAPH && f.wire === 2);
  if (graphs.length !== 1) return null;
  const g = graphs[0]!;
  const graph = fields(model, g.start, g.end);
  const onnxOpset = opset(model, top, "");
  // The int8 form's operators as this model's opsets define them: ReduceMax's axes became an input in 18.
  const int8Possible = kernel === "int8" && onnxOpset >= 13 && opset(model, top, "com.microsoft") >= 1;

  const initializers = new Map<string, Tensor>();
  const initializerNames = new Map<Field, string>();
  for (const f of graph) {
    if (f.field === GRAPH_INITIALIZER) {
      const t = tensor(model, f.start, f.end, external);
      initializers.set(t.name, t);
      initializerNames.set(f, t.name);
    }
  }
  const nodes = graph.filter((f) => f.field === GRAPH_NODE).map((f) => ({ f, info: node(model, f.start, f.end) }));
  const uses = new Map<string, number>();
  const names = new Set(initializers.keys());
  for (const { info } of nodes) {
    for (const x of info.inputs) uses.set(x, (uses.get(x) ?? 0) + 1);
    for (const x of [...info.inputs, ...info.outputs, info.name]) names.add(x);
  }
  for (const f of graph) {
    if (f.field === GRAPH_OUTPUT) {
      for (const v of fields(model, f.start, f.end)) if (v.field === VALUE_INFO_NAME) uses.set(text(model, v), Infinity);
    }
  }
  // Every name the rewrite makes starts with this prefix, which no name of the model starts with.
  let prefix = "dpedge_lowered/";
  while ([...names].some((x) => x.startsWith(prefix))) prefix = `_${prefix}`;
  let counter = 0;
  const fresh = (what: string): string => `${prefix}${counter++}/${what}`;

  // The nodes to lower and their weights (one per B, scales and form, shared by nodes that share them).
  const weights = new Map<string, Weights>();
  const lowered = new Map<Field, { info: NodeInfo; w: Weights }>();
  const loweredUses = new Map<string, number>();
  let size = 0;
  for (const { f, info } of nodes) {
    if (info.op !== "MatMulNBits" || info.domain !== "com.microsoft") continue;
    const [, bName, sName] = info.inputs as [string, string, string];
    const [b, s] = [initializers.get(bName), initializers.get(sName)];
    const shape = lowerable(info, b, s);
    if (shape === null) continue;
    const form: LowerKernel = int8Possible && int8able(info, shape) ? "int8" : "float32";
    const key = `${bName}\0${sName}\0${form}`;
    let w = weights.get(key);
    if (w === undefined) {
      const { k, n, blocks } = shape;
      const bytes = form === "int8" ? scalesAt(shape) + 4 * n * blocks : 4 * k * n;
      const offset = Math.ceil(size / 16) * 16;
      size = offset + bytes;
      if (size > maxBytes) throw new Unlowerable(`the new weights would take more than ${maxBytes} bytes`);
      const count = form === "int8" ? 2 * blocks : 1;
      w = { form, shape, offset, bytes, b: b!, s: s!, names: Array.from({ length: count }, (_, i) => fresh(`${bName}/${i}`)) };
      weights.set(key, w);
    }
    lowered.set(f, { info, w });
    for (const x of [bName, sName]) loweredUses.set(x, (loweredUses.get(x) ?? 0) + 1);
  }
  if (lowered.size === 0) return null;

  const data = new Uint8Array(size);
  for (const w of weights.values()) {
    const { k, n, blocks } = w.shape;
    if (w.form === "float32") dequantize(w.shape, w.b, w.s, new Float32Array(data.buffer, w.offset, k * n));
    else toInt8(w.shape, w.b, w.s, new Int8Array(data.buffer, w.offset, k * n), new Float32Array(data.buffer, w.offset + scalesAt(w.shape), n * blocks));
  }

  const out = new GraphWriter(fresh, onnxOpset);
  let int8 = 0;
  for (const f of graph) {
    const replacement = lowered.get(f);
    if (replacement !== undefined) {
      const { info, w } = replacement;
      if (w.form === "float32") out.node("MatMul", [info.inputs[0]!, w.names[0]!], info.outputs, `${info.name}/float32`);
      else {
        out.int8MatMul(info, w);
        int8++;
      }
      continue;
    }
    const name = initializerNames.get(f);
    if (name !== undefined && loweredUses.has(name) && loweredUses.get(name) === uses.get(name)) continue;
    out.parts.push(model.subarray(f.key, f.end));
  }
  for (const w of weights.values()) {
    const { k, n, blockSize, blocks } = w.shape;
    if (w.form === "float32") out.external(w.names[0]!, FLOAT, [k, n], w.offset, 4 * k * n);
    else {
      const rows = blocks === 1 ? k : blockSize;
      for (let j = 0; j < blocks; j++) {
        out.external(w.names[2 * j]!, INT8, [rows, n], w.offset + j * rows * n, rows * n);
        out.external(w.names[2 * j + 1]!, FLOAT, [n], w.offset + scalesAt(w.shape) + 4 * j * n, 4 * n);
      }
    }
  }
  out.constants();
  const parts = out.parts;
  const graphLength = parts.reduce((s, p) => s + p.length, 0);

  const head: number[] = [];
  putVarint(head, MODEL_GRAPH * 8 + 2);
  putVarint(head, graphLength);
  const before = model.subarray(0, g.key);
  const after = model.subarray(g.end);
  const result = new Uint8Array(before.length + head.length + graphLength + after.length);
  let at = 0;
  for (const p of [before, Uint8Array.from(head), ...parts, after]) {
    result.set(p, at);
    at += p.length;
  }
  return { model: result, data, nodes: lowered.size, int8 };
}

/** A node attribute: an int or ints, not negative (putInt writes no negative varint). */
export type Attribute = [name: string, value: number | readonly number[]];

/** A NodeProto's bytes (onnx.proto): inputs, outputs, name, op type, attributes and domain. */
export function nodeMessage(op: string, inputs: readonly string[], outputs: readonly string[], name: string,
                            attributes: readonly Attribute[] = [], domain = ""): number[] {
  const n: number[] = [];
  for (const x of inputs) putString(n, NODE_INPUT, x);
  for (const x of outputs) putString(n, NODE_OUTPUT, x);
  putString(n, NODE_NAME, name);
  putString(n, NODE_OP_TYPE, op);
  for (const [key, value] of attributes) {
    const a: number[] = [];
    putString(a, ATTR_NAME, key);
    if (typeof value === "number") {
      putInt(a, ATTR_I, value);
      putInt(a, ATTR_TYPE, ATTR_TYPE_INT);
    } else {
      for (const v of value) putInt(a, ATTR_INTS, v);
      putInt(a, ATTR_TYPE, ATTR_TYPE_INTS);
    }
    putBytes(n, NODE_ATTRIBUTE, a);
  }
  if (domain) putString(n, NODE_DOMAIN, domain);
  return n;
}

/** A TensorProto's bytes with its data inline (raw_data). */
export function rawTensorMessage(name: string, type: number, dims: readonly number[], raw: Uint8Array): number[] {
  const t: number[] = [];
  for (const d of dims) putInt(t, T_DIMS, d);
  putInt(t, T_DATA_TYPE, type);
  putString(t, T_NAME, name);
  putBytes(t, T_RAW_DATA, raw);
  return t;
}

/** The new graph's fields, and the small constants its int8 nodes share (written once, at the end). */
class GraphWriter {
  readonly parts: Uint8Array[] = [];
  private readonly shared = new Map<string, { name: string; type: number; dims: number[]; raw: Uint8Array }>();

  constructor(private readonly fresh: (what: string) => string, private readonly opset: number) {}

  node(op: string, inputs: readonly string[], outputs: readonly string[], name: string, attributes: readonly Attribute[] = [],
       domain = ""): void {
    const field: number[] = [];
    putBytes(field, GRAPH_NODE, nodeMessage(op, inputs, outputs, name, attributes, domain));
    this.parts.push(Uint8Array.from(field));
  }

  /** An initializer whose data is in the lowered data at `offset`. */
  external(name: string, type: number, dims: readonly number[], offset: number, length: number): void {
    const t: number[] = [];
    for (const d of dims) putInt(t, T_DIMS, d);
    putInt(t, T_DATA_TYPE, type);
    putString(t, T_NAME, name);
    for (const [k, v] of [["location", LOWERED_LOCATION], ["offset", String(offset)], ["length", String(length)]]) {
      const entry: number[] = [];
      putString(entry, 1, k!);
      putString(entry, 2, v!);
      putBytes(t, T_EXTERNAL_DATA, entry);
    }
    putInt(t, T_DATA_LOCATION, 1);
    const field: number[] = [];
    putBytes(field, GRAPH_INITIALIZER, t);
    this.parts.push(Uint8Array.from(field));
  }

  /** The name of a small constant shared by the int8 nodes (an inline initializer). */
  private constant(type: number, dims: number[], values: readonly number[]): string {
    const key = `${type}:${dims.join()}:${values.join()}`;
    let c = this.shared.get(key);
    if (c === undefined) {
      const raw = type === INT64 ? new Uint8Array(BigInt64Array.from(values, (v) => BigInt(v)).buffer)
        : type === FLOAT ? new Uint8Array(Float32Array.from(values).buffer) : Uint8Array.from(values);
      c = { name: this.fresh("constant"), type, dims, raw };
      this.shared.set(key, c);
    }
    return c.name;
  }

  private ints = (values: readonly number[]): string => this.constant(INT64, [values.length], values);
  private float = (value: number): string => this.constant(FLOAT, [], [value]);

  constants(): void {
    for (const c of this.shared.values()) {
      const field: number[] = [];
      putBytes(field, GRAPH_INITIALIZER, rawTensorMessage(c.name, c.type, c.dims, c.raw));
      this.parts.push(Uint8Array.from(field));
    }
  }

  /**
   * One MatMulNBits as integer maths, the way onnxruntime's native kernel computes it at
   * accuracy_level 4: A's rows quantized to int8 in blocks of block_size along K (each block its
   * own scale, max |a| / 127, values rounded to nearest even), each block multiplied in integers
   * by B's block (B's own integers, q - 128) and scaled by both scales, the blocks' results added.
   * A int8 goes to MatMulIntegerToFloat as uint8 with zero point 128 (its A is uint8 only):
   * a + 128 and a zero point of 128 are the same integers.
   */
  int8MatMul(info: NodeInfo, w: Weights): void {
    const { k, n, blockSize, blocks } = w.shape;
    const base = `${info.name}/int8`;
    const [a, y] = [info.inputs[0]!, info.outputs[0]!];
    const { q2, s2 } = this.quantized(a, k, blocks === 1 ? k : blockSize, blocks);
    const flat = this.fresh("y");
    const zp = this.constant(UINT8, [], [128]);
    const v = (what: string): string => this.fresh(what);
    if (blocks === 1) {
      this.node("MatMulIntegerToFloat", [q2, w.names[0]!, s2, w.names[1]!, zp], [flat], `${base}/matmul`, [], "com.microsoft");
    } else {
      const qs = this.split(q2, Array(blocks).fill(blockSize));
      const ss = this.split(s2, Array(blocks).fill(1));
      const ys = qs.map((qj, j) => {
        const yj = v(`y_${j}`);
        this.node("MatMulIntegerToFloat", [qj, w.names[2 * j]!, ss[j]!, w.names[2 * j + 1]!, zp], [yj], `${base}/matmul_${j}`, [],
          "com.microsoft");
        return yj;
      });
      this.node("Sum", ys, [flat], `${base}/sum`);
    }
    this.node("Reshape", [flat, this.outShape(a, n)], [y], `${base}/reshape_out`);
  }

  private readonly memo = new Map<string, string[]>();

  /** A's rows quantized (uint8 [M, K], zero point 128) and their scales ([M, blocks]), made once per A and block length. */
  private quantized(a: string, k: number, group: number, blocks: number): { q2: string; s2: string } {
    const key = `q\0${a}\0${k}\0${group}`;
    let made = this.memo.get(key);
    if (made === undefined) {
      const v = (what: string): string => this.fresh(what);
      const base = `${this.fresh("quantize")}`;
      const rows = v("rows");
      this.node("Reshape", [a, this.ints([-1, blocks, group])], [rows], `${base}/reshape`);
      const abs = v("abs");
      this.node("Abs", [rows], [abs], `${base}/abs`);
      const amax = v("amax");
      if (this.opset >= 18) this.node("ReduceMax", [abs, this.ints([2])], [amax], `${base}/amax`, [["keepdims", 1]]);
      else this.node("ReduceMax", [abs], [amax], `${base}/amax`, [["axes", [2]], ["keepdims", 1]]);
      // A block of zeros: scale 0 (its products are 0) and any finite inverse; the floor keeps 1 / scale finite.
      const floor = v("amax_floor");
      this.node("Max", [amax, this.float(1e-30)], [floor], `${base}/floor`);
      const scale = v("scale");
      this.node("Div", [floor, this.float(127)], [scale], `${base}/scale`);
      const inverse = v("inverse");
      this.node("Div", [this.float(1), scale], [inverse], `${base}/inverse`);
      const scaled = v("scaled");
      this.node("Mul", [rows, inverse], [scaled], `${base}/scaled`);
      // round(x / 1) + 128, saturated to uint8: x is within [-127, 127], so no value saturates.
      const q = v("q");
      this.node("QuantizeLinear", [scaled, this.float(1), this.constant(UINT8, [], [128])], [q], `${base}/quantize`);
      const q2 = v("q2");
      this.node("Reshape", [q, this.ints([-1, k])], [q2], `${base}/reshape_q`);
      const s2 = v("scales");
      this.node("Reshape", [scale, this.ints([-1, blocks])], [s2], `${base}/reshape_scales`);
      made = [q2, s2];
      this.memo.set(key, made);
    }
    return { q2: made[0]!, s2: made[1]! };
  }

  /** `x` split along axis 1 into parts of these lengths, once per x. */
  private split(x: string, lengths: number[]): string[] {
    const key = `s\0${x}`;
    let made = this.memo.get(key);
    if (made === undefined) {
      made = lengths.map((_, j) => this.fresh(`part_${j}`));
      this.node("Split", [x, this.ints(lengths)], made, `${this.fresh("split")}`, [["axis", 1]]);
      this.memo.set(key, made);
    }
    return made;
  }

  /** A's shape with its last axis N: the shape of MatMulNBits' output. */
  private outShape(a: string, n: number): string {
    const key = `o\0${a}\0${n}`;
    let made = this.memo.get(key);
    if (made === undefined) {
      const leadKey = `l\0${a}`;
      let lead = this.memo.get(leadKey);
      if (lead === undefined) {
        const shape = this.fresh("shape");
        this.node("Shape", [a], [shape], `${shape}/node`);
        lead = [this.fresh("lead")];
        this.node("Slice", [shape, this.ints([0]), this.ints([-1])], lead, `${lead[0]}/node`);
        this.memo.set(leadKey, lead);
      }
      made = [this.fresh("out_shape")];
      this.node("Concat", [lead[0]!, this.ints([n])], made, `${made[0]}/node`, [["axis", 0]]);
      this.memo.set(key, made);
    }
    return made[0]!;
  }
}
