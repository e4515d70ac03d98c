/**
 * MatMulNBits for onnxruntime-web: its weights dequantized once, at load, instead of on every run.
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
 * Lowered: `bits` 8, inputs A, B and scales only (no zero points, g_idx or bias), B uint8
 * [N, ceil(K / block_size), block_size] and scales float32 with N * ceil(K / block_size) values,
 * B's and the scales' data in the model's external data (the bundle's form) or inline. Any other
 * MatMulNBits is left as it is (correct, as slow as before). The model has already passed the
 * family check (model_family.ts): every length is still checked against the bytes present.
 */

/** The lowered model, the external data its new initializers name, and how many nodes were lowered. */
export interface Lowered {
  readonly model: Uint8Array;
  /** The float weights, under `LOWERED_LOCATION`. */
  readonly weights: Float32Array;
  readonly nodes: number;
}

/** Where the lowered model's float initializers keep their data (an externalData path). */
export const LOWERED_LOCATION = "dpedge-matmulnbits-float32";

/**
 * The most float weights a rewrite makes (bytes): a bundle travels, and a crafted one could name
 * one large B with many scales, each its own float copy. Past it the model goes to the engine as
 * it is (correct, as slow as before). MiniLM's encoder needs 42 MB; the laptop tier's mpnet would
 * need 340 MB, past the bound, so it runs as before (four times its 8-bit weights is more than a
 * browser tab should take for speed).
 */
export const MAX_LOWERED_BYTES = 256 * 2 ** 20;

// Field numbers of onnx.proto.
const MODEL_GRAPH = 7;
const [GRAPH_NODE, GRAPH_INITIALIZER, GRAPH_OUTPUT] = [1, 5, 12];
const [NODE_INPUT, NODE_OUTPUT, NODE_NAME, NODE_OP_TYPE, NODE_ATTRIBUTE, NODE_DOMAIN] = [1, 2, 3, 4, 5, 7];
const [ATTR_NAME, ATTR_I] = [1, 3];
const [T_DIMS, T_DATA_TYPE, T_FLOAT_DATA, T_NAME, T_RAW_DATA, T_EXTERNAL_DATA, T_DATA_LOCATION] = [1, 2, 4, 8, 9, 13, 14];
const [FLOAT, UINT8] = [1, 2];
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
function putVarint(out: number[], value: number): void {
  while (value >= 0x80) {
    out.push((value % 0x80) | 0x80);
    value = Math.floor(value / 0x80);
  }
  out.push(value);
}

/** A length-delimited field (a string, bytes or an embedded message). */
function putBytes(out: number[], field: number, bytes: Uint8Array | readonly number[]): void {
  putVarint(out, field * 8 + 2);
  putVarint(out, bytes.length);
  for (const b of bytes) out.push(b);
}

function putInt(out: number[], field: number, value: number): void {
  putVarint(out, field * 8);
  putVarint(out, value);
}

const putString = (out: number[], field: number, s: string): void => putBytes(out, field, encoder.encode(s));

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

/** Whether this MatMulNBits is lowered: its K and N, or null. */
function lowerable(n: NodeInfo, b: Tensor | undefined, scales: Tensor | undefined): { k: number; n: number } | null {
  const [k, nn, bits, blockSize] = ["K", "N", "bits", "block_size"].map((a) => n.ints.get(a) ?? 0) as [number, number, number, number];
  const inputs = n.inputs.filter((x) => x !== "");
  if (bits !== 8 || inputs.length !== 3 || n.inputs.length > 3 || !(k > 0 && nn > 0 && blockSize > 0)) return null;
  if (k * nn >= 2 ** 30 || blockSize >= 2 ** 30) return null;
  if (b === undefined || scales === undefined || b.data === null || scales.data === null) return null;
  const blocks = Math.ceil(k / blockSize);
  if (b.type !== UINT8 || b.dims.join() !== [nn, blocks, blockSize].join() || b.data.length !== nn * blocks * blockSize) return null;
  if (scales.type !== FLOAT || scales.data.length !== 4 * nn * blocks) return null;
  return { k, n: nn };
}

/**
 * B's values as float32 into `out`, K x N row-major: (q - 128) * scale, each an integer times a
 * float32 rounded once to float32, as MlasDequantizeBlockwise computes them. B is stored column by
 * column (N, block, row in block); the copy goes by tiles of 64 x 64 so that both sides stay in cache.
 */
function dequantize(n: NodeInfo, b: Tensor, scales: Tensor, out: Float32Array): void {
  // Small integers (| 0): the varint reader's numbers are doubles, which would make every index below one.
  const [k, nn, blockSize] = ["K", "N", "block_size"].map((a) => n.ints.get(a)! | 0) as [number, number, number];
  const blocks = Math.ceil(k / blockSize) | 0;
  const stride = blocks * blockSize;
  const q = b.data!;
  const s = scales.data!;
  const scale = new Float32Array(nn * blocks);
  new Uint8Array(scale.buffer).set(s); // little-endian, as WebAssembly and every browser's platform
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
 * The model with its 8-bit MatMulNBits nodes as MatMul on float weights (above), or null if it has
 * none to lower. `external`: the model's external data by location (the bundle's weights).
 */
export function lowerMatMulNBits(model: Uint8Array, external: ReadonlyMap<string, Uint8Array>,
                                 maxBytes: number = MAX_LOWERED_BYTES): Lowered | null {
  try {
    return lower(model, new Map(external), maxBytes);
  } catch (e) {
    if (e instanceof Unlowerable) return null;
    throw e;
  }
}

function lower(model: Uint8Array, external: Map<string, Uint8Array>, maxBytes: number): Lowered | null {
  const top = fields(model, 0, model.length);
  const graphs = top.filter((f) => f.field === MODEL_GRAPH && f.wire === 2);
  if (graphs.length !== 1) return null;
  const g = graphs[0]!;
  const graph = fields(model, g.start, g.end);

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
  for (const { info } of nodes) for (const x of info.inputs) uses.set(x, (uses.get(x) ?? 0) + 1);
  for (const f of graph) {
    if (f.field === GRAPH_OUTPUT) {
      for (const v of fields(model, f.start, f.end)) if (v.field === VALUE_INFO_NAME) uses.set(text(model, v), Infinity);
    }
  }

  // The nodes to lower and their float weights (one per B and scales, shared by nodes that share them).
  const floats = new Map<string, { name: string; k: number; n: number; offset: number; node: NodeInfo; b: Tensor; s: Tensor }>();
  const names = new Set(initializers.keys());
  const lowered = new Map<Field, { a: string; weights: string }>();
  const loweredUses = new Map<string, number>();
  let size = 0;
  for (const { f, info } of nodes) {
    if (info.op !== "MatMulNBits" || info.domain !== "com.microsoft") continue;
    const [a, bName, sName] = info.inputs as [string, string, string];
    const key = `${bName}\0${sName}`;
    let w = floats.get(key);
    if (w === undefined) {
      const [b, s] = [initializers.get(bName), initializers.get(sName)];
      const shape = lowerable(info, b, s);
      if (shape === null) continue;
      let name = `${bName}/dequantized_float32`;
      while (names.has(name)) name += "_";
      names.add(name);
      w = { name, ...shape, offset: size, node: info, b: b!, s: s! };
      size += shape.k * shape.n;
      if (4 * size > maxBytes) throw new Unlowerable(`the float weights would take more than ${maxBytes} bytes`);
      floats.set(key, w);
    }
    lowered.set(f, { a, weights: w.name });
    for (const x of [bName, sName]) loweredUses.set(x, (loweredUses.get(x) ?? 0) + 1);
  }
  if (lowered.size === 0) return null;

  const weights = new Float32Array(size);
  for (const w of floats.values()) dequantize(w.node, w.b, w.s, weights.subarray(w.offset, w.offset + w.k * w.n));

  // The graph again, field by field: lowered nodes replaced, initializers only they used dropped, the float weights added.
  const parts: Uint8Array[] = [];
  for (const f of graph) {
    const replacement = lowered.get(f);
    if (replacement !== undefined) {
      const info = node(model, f.start, f.end);
      const out: number[] = [];
      putString(out, NODE_INPUT, replacement.a);
      putString(out, NODE_INPUT, replacement.weights);
      for (const o of info.outputs) putString(out, NODE_OUTPUT, o);
      putString(out, NODE_NAME, `${info.name}/float32`);
      putString(out, NODE_OP_TYPE, "MatMul");
      const field: number[] = [];
      putBytes(field, GRAPH_NODE, out);
      parts.push(Uint8Array.from(field));
      continue;
    }
    const name = initializerNames.get(f);
    if (name !== undefined && loweredUses.has(name) && loweredUses.get(name) === uses.get(name)) continue;
    parts.push(model.subarray(f.key, f.end));
  }
  for (const w of floats.values()) {
    const t: number[] = [];
    putInt(t, T_DIMS, w.k);
    putInt(t, T_DIMS, w.n);
    putInt(t, T_DATA_TYPE, FLOAT);
    putString(t, T_NAME, w.name);
    for (const [k, v] of [["location", LOWERED_LOCATION], ["offset", String(4 * w.offset)], ["length", String(4 * w.k * w.n)]]) {
      const entry: number[] = [];
      putString(entry, 1, k!);
      putString(entry, 2, v!);
      putBytes(t, T_EXTERNAL_DATA, entry);
    }
    putInt(t, T_DATA_LOCATION, 1);
    const field: number[] = [];
    putBytes(field, GRAPH_INITIALIZER, t);
    parts.push(Uint8Array.from(field));
  }
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
  return { model: result, weights, nodes: lowered.size };
}
