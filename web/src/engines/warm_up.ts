/**
 * A warm-up of onnxruntime-web, for the time a bundle is still downloading (WorkerClassifier.load
 * given a promise of its bytes): start onnxruntime-web, create a session of a small model built
 * here, run it once, release it. Most of a cold load's session is the WebAssembly's first
 * execution (the browser compiles and optimizes its functions as they first run), which the
 * bundle's session then finds done (docs/web.md, "Speed and size").
 *
 * The model knows nothing of any bundle: one encoder layer of the exporter's family at a small
 * width (WARM_WIDTH), with the operators a bundle's encoder runs: Gather, LayerNormalization,
 * 8-bit MatMulNBits, MatMul, Transpose, Softmax, Erf, the attention mask's Cast and Unsqueeze,
 * ReduceSum, ReduceL2. Its MatMulNBits go through the same rewrite as a bundle's (lower_nbits.ts,
 * the kernel asked for), so that the integer kernels the bundle will run are the ones warmed.
 * Its weights are fixed numbers, not random: the warm-up does the same work every time.
 */
import { LOWERED_LOCATION, lowerMatMulNBits, nodeMessage, putBytes, putInt, putString, rawTensorMessage,
  type Attribute, type LowerKernel } from "./lower_nbits.js";
import { createSession, run, type OrtModule, type OrtSessionOptions } from "./onnxruntime.js";

/** The layer's width (hidden size); the feed-forward part is twice as wide, so that one MatMulNBits spans two blocks. */
export const WARM_WIDTH = 128;
/** The tokens of the one run. */
export const WARM_TOKENS = 16;
const BLOCK = 128;
const VOCAB = 64;

// Field numbers of onnx.proto.
const [MODEL_IR_VERSION, MODEL_PRODUCER, MODEL_GRAPH, MODEL_OPSET] = [1, 2, 7, 8];
const [GRAPH_NODE, GRAPH_NAME, GRAPH_INITIALIZER, GRAPH_INPUT, GRAPH_OUTPUT] = [1, 2, 5, 11, 12];
const [FLOAT, UINT8, INT64] = [1, 2, 7];

const message = (write: (out: number[]) => void): number[] => {
  const out: number[] = [];
  write(out);
  return out;
};

/** A node of the warm-up graph: its one output names it (the rewrite names the nodes it makes after it). */
const nodeProto = (op: string, inputs: readonly string[], output: string,
                   attrs: Record<string, Attribute[1]> = {}, domain = ""): number[] =>
  nodeMessage(op, inputs, [output], `/${output}`, Object.entries(attrs), domain);

/** A graph input or output: its name, element type and dims (a string: a symbolic dim). */
function valueInfo(name: string, type: number, dims: readonly (number | string)[]): number[] {
  const shape = message((s) => {
    for (const d of dims) putBytes(s, 1, message((dim) => (typeof d === "number" ? putInt(dim, 1, d) : putString(dim, 2, d))));
  });
  return message((out) => {
    putString(out, 1, name);
    putBytes(out, 2, message((t) => putBytes(t, 1, message((tt) => {
      putInt(tt, 1, type);
      putBytes(tt, 2, shape);
    }))));
  });
}

const floats = (n: number, f: (i: number) => number): Uint8Array => new Uint8Array(Float32Array.from({ length: n }, (_, i) => f(i)).buffer);
const int64s = (values: readonly number[]): Uint8Array => new Uint8Array(BigInt64Array.from(values.map(BigInt)).buffer);

/**
 * The warm-up model (ONNX, opsets 18 and com.microsoft 1, as the exporter's encoders): inputs
 * input_ids and attention_mask int64 [1, n], output sentence_embedding float32 [1, WARM_WIDTH].
 */
export function warmUpModel(): Uint8Array {
  const h = WARM_WIDTH;
  const initializers: number[][] = [];
  const init = (name: string, type: number, dims: readonly number[], data: Uint8Array): string => {
    initializers.push(rawTensorMessage(name, type, dims, data));
    return name;
  };
  /** MatMulNBits' B (uint8 [N, blocks, BLOCK]) and scales (float32 [N * blocks]) for K x N. */
  const nbits = (name: string, k: number, n: number): [string, string] => {
    const blocks = k / BLOCK;
    return [init(`${name}.B`, UINT8, [n, blocks, BLOCK], Uint8Array.from({ length: n * k }, (_, i) => (i * 37 + 11) % 256)),
      init(`${name}.scales`, FLOAT, [n * blocks], floats(n * blocks, (i) => 0.002 + 0.0001 * (i % 7)))];
  };
  const table = init("embeddings", FLOAT, [VOCAB, h], floats(VOCAB * h, (i) => Math.sin(i * 0.37)));
  const gamma = init("ln.gamma", FLOAT, [h], floats(h, (i) => 1 + 0.01 * (i % 5)));
  const beta = init("ln.beta", FLOAT, [h], floats(h, (i) => 0.01 * (i % 3)));
  const axis1 = init("axis1", INT64, [1], int64s([1]));
  const scalar = (name: string, v: number): string => init(name, FLOAT, [], floats(1, () => v));
  const [one, half, root2, negative, rootH] = [scalar("one", 1), scalar("half", 0.5), scalar("root2", Math.SQRT2),
    scalar("masked", -10000), scalar("rootH", Math.sqrt(h))];
  const nbitsAttrs = (k: number, n: number): Record<string, Attribute[1]> => ({ K: k, N: n, bits: 8, block_size: BLOCK, accuracy_level: 4 });
  const nodes = [
    nodeProto("Gather", [table, "input_ids"], "x"),
    nodeProto("LayerNormalization", ["x", gamma, beta], "h", { axis: 2 }),
    // Attention, one head: softmax((h Wq) (h Wk)^T / sqrt(H) + mask) (h Wv)
    ...(["q", "k", "v"] as const).map((w) => nodeProto("MatMulNBits", ["h", ...nbits(`W${w}`, h, h)], w, nbitsAttrs(h, h), "com.microsoft")),
    nodeProto("Transpose", ["k"], "kT", { perm: [0, 2, 1] }),
    nodeProto("MatMul", ["q", "kT"], "scores"),
    nodeProto("Div", ["scores", rootH], "scaled"),
    nodeProto("Cast", ["attention_mask"], "maskF", { to: FLOAT }),
    nodeProto("Unsqueeze", ["maskF", axis1], "mask3"),
    nodeProto("Sub", [one, "mask3"], "unmasked"),
    nodeProto("Mul", ["unmasked", negative], "maskBias"),
    nodeProto("Add", ["scaled", "maskBias"], "biased"),
    nodeProto("Softmax", ["biased"], "p", { axis: 2 }),
    nodeProto("MatMul", ["p", "v"], "attended"),
    nodeProto("Add", ["attended", "x"], "r"),
    nodeProto("LayerNormalization", ["r", gamma, beta], "h2", { axis: 2 }),
    // Feed-forward with GELU (x / 2 (1 + erf(x / sqrt 2))); its second MatMulNBits has K of two blocks.
    nodeProto("MatMulNBits", ["h2", ...nbits("W1", h, 2 * h)], "f", nbitsAttrs(h, 2 * h), "com.microsoft"),
    nodeProto("Div", ["f", root2], "fs"),
    nodeProto("Erf", ["fs"], "erf"),
    nodeProto("Add", ["erf", one], "erf1"),
    nodeProto("Mul", ["f", "erf1"], "g2"),
    nodeProto("Mul", ["g2", half], "g"),
    nodeProto("MatMulNBits", ["g", ...nbits("W2", 2 * h, h)], "o", nbitsAttrs(2 * h, h), "com.microsoft"),
    nodeProto("Add", ["o", "h2"], "y"),
    // Pooling and normalization: a sum over the tokens, divided by its L2 norm.
    nodeProto("ReduceSum", ["y", axis1], "pooled", { keepdims: 0 }),
    nodeProto("ReduceL2", ["pooled", axis1], "norm", { keepdims: 1 }),
    nodeProto("Div", ["pooled", "norm"], "sentence_embedding"),
  ];
  const graph = message((g) => {
    for (const n of nodes) putBytes(g, GRAPH_NODE, n);
    putString(g, GRAPH_NAME, "dpedge warm-up");
    for (const t of initializers) putBytes(g, GRAPH_INITIALIZER, t);
    putBytes(g, GRAPH_INPUT, valueInfo("input_ids", INT64, [1, "n"]));
    putBytes(g, GRAPH_INPUT, valueInfo("attention_mask", INT64, [1, "n"]));
    putBytes(g, GRAPH_OUTPUT, valueInfo("sentence_embedding", FLOAT, [1, h]));
  });
  return Uint8Array.from(message((m) => {
    putInt(m, MODEL_IR_VERSION, 8);
    putString(m, MODEL_PRODUCER, "dpedge");
    putBytes(m, MODEL_GRAPH, graph);
    putBytes(m, MODEL_OPSET, message((o) => putInt(o, 2, 18)));
    putBytes(m, MODEL_OPSET, message((o) => {
      putString(o, 1, "com.microsoft");
      putInt(o, 2, 1);
    }));
  }));
}

/**
 * Start the engine and warm it: a session of warmUpModel() (rewritten for `kernel`, as a bundle's
 * model would be), one run of WARM_TOKENS tokens, the session released. `options`: the engine's
 * session options (its execution provider). Throws what onnxruntime throws; the caller decides
 * that a warm-up's failure changes nothing.
 */
export async function warmUp(ort: OrtModule, kernel: LowerKernel | "matmulnbits", options: OrtSessionOptions): Promise<void> {
  const model = warmUpModel();
  const lowered = kernel === "matmulnbits" ? null : lowerMatMulNBits(model, new Map(), { kernel });
  const io = { inputs: ["input_ids", "attention_mask"], output: "sentence_embedding", dim: WARM_WIDTH };
  const session = await createSession(ort, lowered?.model ?? model, new Uint8Array(0), io, options,
    lowered ? [{ path: LOWERED_LOCATION, data: lowered.data }] : []);
  try {
    const embedding = await run(ort, session, io, Array.from({ length: WARM_TOKENS }, (_, i) => (i * 7) % VOCAB));
    if (embedding.length !== WARM_WIDTH) throw new Error(`the warm-up's model answered ${embedding.length} values, not ${WARM_WIDTH}`);
  } finally {
    await session.release();
  }
}
