/**
 * The browser engine's rewrites of MatMulNBits (src/engines/lower_nbits.ts), on the engine they
 * are for: onnxruntime-web's WebAssembly, here in Node.
 *
 * - float32: every 8-bit MatMulNBits becomes a MatMul on float weights; the embeddings stay those of
 *   onnxruntime-web's own MatMulNBits kernel, which dequantizes the same float32 weights on every
 *   run (only the float GEMMs' summation order differs).
 * - int8: every MatMulNBits becomes integer maths as onnxruntime's native kernel computes it at
 *   accuracy_level 4 (the activations quantized per row in blocks of block_size); its embeddings
 *   are held to the corpus's, which the Python reader's native onnxruntime wrote, and must be at
 *   least as close to them as the float path's.
 */
import * as ortWeb from "onnxruntime-web/wasm";
import { describe, expect, it } from "vitest";
import { LOWERED_LOCATION, lowerMatMulNBits, MAX_LOWERED_BYTES, type LowerKernel } from "../src/engines/lower_nbits.js";
import { createSession, run, WEIGHTS_LOCATION, type OrtModule, type OrtSession } from "../src/engines/onnxruntime.js";
import { Classifier } from "../src/classifier.js";
import { BundleError } from "../src/errors.js";
import { webEngine } from "../src/browser.js";
import { readBundle, type Bundle } from "../src/reader.js";
import { TextTokenizer } from "../src/tokenizer.js";
import { corpora, cosine, type Corpus } from "./corpus.js";

ortWeb.env.wasm.numThreads = 1;
const ort = ortWeb as unknown as OrtModule;
const count = (model: Uint8Array, op: string): number => {
  let n = 0;
  const needle = new TextEncoder().encode(op);
  for (let i = 0; i + needle.length <= model.length; i++) {
    let j = 0;
    while (j < needle.length && model[i + j] === needle[j]) j++;
    if (j === needle.length) n++;
  }
  return n;
};
const io = (b: Bundle) => ({ inputs: b.encoder.inputs, output: b.encoder.output, dim: b.encoder.dim });

async function session(b: Bundle, kernel: LowerKernel | "matmulnbits"): Promise<OrtSession> {
  const { model, weights } = b.encoder;
  const lowered = kernel === "matmulnbits" ? null : lowerMatMulNBits(model, new Map([[WEIGHTS_LOCATION, weights]]), { kernel });
  if (kernel !== "matmulnbits") expect(lowered).not.toBeNull();
  return createSession(ort, lowered?.model ?? model, weights, io(b), { executionProviders: ["wasm"] },
    lowered ? [{ path: LOWERED_LOCATION, data: lowered.data }] : []);
}

async function defaultBundle(corpus: Corpus): Promise<Bundle> {
  return readBundle(corpus.read("accept/default.dpedge"));
}

describe("webEngine's kernel option", () => {
  it("is int8, float32 or matmulnbits", async () => {
    await expect(webEngine({ kernel: "int4" as "int8" })()).rejects.toThrow(/kernel is "int8", "float32" or "matmulnbits"/);
  });
});

describe.each(corpora.map((c) => [c.name, c] as const))("MatMulNBits rewritten at load (%s)", (_, corpus) => {
  it("float32: rewrites every MatMulNBits of the encoder, and the embeddings stay the same", async () => {
    const b = await defaultBundle(corpus);
    const { model, weights } = b.encoder;
    const lowered = lowerMatMulNBits(model, new Map([[WEIGHTS_LOCATION, weights]]));
    expect(lowered).not.toBeNull();
    expect(lowered!.nodes).toBe(count(model, "MatMulNBits"));
    expect(lowered!.int8).toBe(0);
    expect(count(lowered!.model, "MatMulNBits")).toBe(0);

    const [before, after] = [await session(b, "matmulnbits"), await session(b, "float32")];
    const tok = new TextTokenizer(b.encoder.tokenizer, b.encoder.maxLength);
    for (const text of [b.encoder.checkText, "wake me up at six", "the quick brown fox jumps over the lazy dog ".repeat(60)]) {
      const ids = tok.encode(text);
      const [x, y] = [await run(ort, before, io(b), ids), await run(ort, after, io(b), ids)];
      expect(y.length).toBe(b.encoder.dim);
      const diff = Math.max(...x.map((v, i) => Math.abs(v - y[i]!)));
      expect(diff).toBeLessThan(1e-5);
    }
    await before.release();
    await after.release();
  });

  it("int8: rewrites every MatMulNBits into blocks of integer products, with the bundle's weights as they are", async () => {
    const b = await defaultBundle(corpus);
    const { model, weights } = b.encoder;
    const lowered = lowerMatMulNBits(model, new Map([[WEIGHTS_LOCATION, weights]]), { kernel: "int8" })!;
    const nodes = count(model, "MatMulNBits");
    expect(lowered.nodes).toBe(nodes);
    expect(lowered.int8).toBe(nodes);
    expect(count(lowered.model, "MatMulNBits")).toBe(0);
    expect(count(lowered.model, '"MatMul"')).toBe(0);
    // One MatMulIntegerToFloat per block of K (MiniLM: 5 MatMulNBits of K 384 and one of K 1536 per layer, in
    // blocks of 128: 6 x (5 x 3 + 12) = 162; the tiny encoder's K is below one block: one each), and one
    // quantization of the activations per distinct input (MiniLM's query, key and value share theirs: 4 per layer).
    const real = corpus.name === "real corpus";
    const blocks = real ? 162 : nodes;
    expect(count(lowered.model, "MatMulIntegerToFloat")).toBe(blocks);
    if (real) expect(count(lowered.model, "QuantizeLinear")).toBe(24);
    // Weights: one byte each (the float path's four), and a float32 scale per block and column.
    const float = lowerMatMulNBits(model, new Map([[WEIGHTS_LOCATION, weights]]))!;
    expect(lowered.data.length).toBeLessThan(float.data.length / 3);
  });

  it("int8: the embeddings are the native kernel's (the corpus's, Python's), closer than the float path's", async () => {
    const b = await defaultBundle(corpus);
    const c = corpus.cases.accept.find((x) => x.file === "accept/default.dpedge")!;
    const refs = [{ ids: c.check!.token_ids, embedding: c.check!.embedding },
      ...c.queries!.filter((q) => q.embedding && q.token_ids).map((q) => ({ ids: q.token_ids!, embedding: q.embedding! }))];
    expect(refs.length).toBeGreaterThan(10);
    const [int8, float] = [await session(b, "int8"), await session(b, "float32")];
    const [ci, cf] = [[] as number[], [] as number[]];
    for (const r of refs) {
      ci.push(cosine(await run(ort, int8, io(b), r.ids), r.embedding));
      cf.push(cosine(await run(ort, float, io(b), r.ids), r.embedding));
    }
    const mean = (xs: number[]): number => xs.reduce((s, x) => s + x, 0) / xs.length;
    expect(Math.min(...ci)).toBeGreaterThan(0.998);
    expect(1 - mean(ci)).toBeLessThan(1 - mean(cf));
    await int8.release();
    await float.release();
  });

  it("leaves a model without MatMulNBits, or one it cannot read, to the engine as it is", async () => {
    const b = await defaultBundle(corpus);
    const external = new Map([[WEIGHTS_LOCATION, b.encoder.weights]]);
    for (const kernel of ["float32", "int8"] as const) {
      const lowered = lowerMatMulNBits(b.encoder.model, external, { kernel })!;
      expect(lowerMatMulNBits(lowered.model, external, { kernel })).toBeNull();
      // Without the weights' bytes the initializers cannot be read: nothing is rewritten.
      expect(lowerMatMulNBits(b.encoder.model, new Map(), { kernel })).toBeNull();
      expect(lowerMatMulNBits(b.encoder.model.subarray(0, 1000), new Map(), { kernel })).toBeNull();
    }
  });

  it("int8: a model whose ONNX opset is before 13 gets the float form instead", async () => {
    const b = await defaultBundle(corpus);
    // The model's opset import for ONNX's domain, {version: 18} (field 8, then field 2 = 18), made 12.
    const model = b.encoder.model.slice();
    let patched = 0;
    for (let i = 0; i + 3 < model.length; i++) {
      if (model[i] === 0x42 && model[i + 1] === 2 && model[i + 2] === 0x10 && model[i + 3] === 18) {
        model[i + 3] = 12;
        patched++;
      }
    }
    expect(patched).toBe(1);
    const lowered = lowerMatMulNBits(model, new Map([[WEIGHTS_LOCATION, b.encoder.weights]]), { kernel: "int8" })!;
    expect(lowered.nodes).toBe(count(model, "MatMulNBits"));
    expect(lowered.int8).toBe(0);
    expect(count(lowered.model, "MatMulIntegerToFloat")).toBe(0);
  });

  // The refusal cases are the committed corpus's (the real corpus has none).
  it.runIf(corpus.cases.refuse.length > 0)("runs only on a bundle the reader accepted: a refused one never reaches the engine, so its refusal is the same", async () => {
    const refused = corpus.cases.refuse.filter((c) => c.pack === undefined);
    expect(refused.length).toBeGreaterThan(10);
    for (const c of refused) {
      let made = 0;
      const factory = async () => {
        made++;
        throw new Error("the engine was made for a refused bundle");
      };
      const err = await Classifier.load(corpus.read(c.file), { engine: factory }).then(() => null, (e: unknown) => e);
      expect(err, c.file).toBeInstanceOf(BundleError);
      expect([(err as BundleError).code, (err as BundleError).path], c.file).toEqual([c.code, c.path]);
      expect(made, c.file).toBe(0);
    }
  });

  it.each(["float32", "int8"] as const)("%s: makes no more weights than its bound: past it, the model goes to the engine as it is", async (kernel) => {
    const b = await defaultBundle(corpus);
    const external = new Map([[WEIGHTS_LOCATION, b.encoder.weights]]);
    const need = lowerMatMulNBits(b.encoder.model, external, { kernel })!.data.byteLength;
    expect(need).toBeLessThanOrEqual(MAX_LOWERED_BYTES);
    expect(lowerMatMulNBits(b.encoder.model, external, { kernel, maxBytes: need })).not.toBeNull();
    expect(lowerMatMulNBits(b.encoder.model, external, { kernel, maxBytes: need - 1 })).toBeNull();
  });
});
