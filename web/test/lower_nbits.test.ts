/**
 * The browser engine's rewrite of MatMulNBits (src/engines/lower_nbits.ts): every 8-bit
 * MatMulNBits of the corpus encoders becomes a MatMul on float weights, and the rewritten model
 * gives the same embeddings as the bundle's own, on the engine it is for: onnxruntime-web's
 * WebAssembly, here in Node, whose MatMulNBits kernel dequantizes the same float32 weights on every
 * run (only the float GEMMs' summation order differs). onnxruntime-node is no reference: its native
 * kernel multiplies in int8 (accuracy_level 4).
 */
import * as ortWeb from "onnxruntime-web/wasm";
import { describe, expect, it } from "vitest";
import { LOWERED_LOCATION, lowerMatMulNBits, MAX_LOWERED_BYTES } from "../src/engines/lower_nbits.js";
import { createSession, run, WEIGHTS_LOCATION, type OrtModule } from "../src/engines/onnxruntime.js";
import { readBundle } from "../src/reader.js";
import { TextTokenizer } from "../src/tokenizer.js";
import { corpora } from "./corpus.js";

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

describe.each(corpora.map((c) => [c.name, c] as const))("MatMulNBits dequantized at load (%s)", (_, corpus) => {
  it("rewrites every MatMulNBits of the encoder, and the embeddings stay the same", async () => {
    const b = await readBundle(corpus.read("accept/default.dpedge"));
    const { model, weights } = b.encoder;
    const lowered = lowerMatMulNBits(model, new Map([[WEIGHTS_LOCATION, weights]]));
    expect(lowered).not.toBeNull();
    expect(lowered!.nodes).toBe(count(model, "MatMulNBits"));
    expect(count(lowered!.model, "MatMulNBits")).toBe(0);

    const io = { inputs: b.encoder.inputs, output: b.encoder.output, dim: b.encoder.dim };
    const options = { executionProviders: ["wasm"] };
    const before = await createSession(ort, model, weights, io, options);
    const after = await createSession(ort, lowered!.model, weights, io, options, [{ path: LOWERED_LOCATION,
      data: new Uint8Array(lowered!.weights.buffer, lowered!.weights.byteOffset, lowered!.weights.byteLength) }]);
    const tok = new TextTokenizer(b.encoder.tokenizer, b.encoder.maxLength);
    for (const text of [b.encoder.checkText, "wake me up at six", "the quick brown fox jumps over the lazy dog ".repeat(60)]) {
      const ids = tok.encode(text);
      const [x, y] = [await run(ort, before, io, ids), await run(ort, after, io, ids)];
      expect(y.length).toBe(b.encoder.dim);
      const diff = Math.max(...x.map((v, i) => Math.abs(v - y[i]!)));
      expect(diff).toBeLessThan(1e-5);
    }
    await before.release();
    await after.release();
  });

  it("leaves a model without MatMulNBits, or one it cannot read, to the engine as it is", async () => {
    const b = await readBundle(corpus.read("accept/default.dpedge"));
    const lowered = lowerMatMulNBits(b.encoder.model, new Map([[WEIGHTS_LOCATION, b.encoder.weights]]))!;
    expect(lowerMatMulNBits(lowered.model, new Map([[WEIGHTS_LOCATION, b.encoder.weights]]))).toBeNull();
    // Without the weights' bytes the initializers cannot be read: nothing is rewritten.
    expect(lowerMatMulNBits(b.encoder.model, new Map())).toBeNull();
    expect(lowerMatMulNBits(b.encoder.model.subarray(0, 1000), new Map())).toBeNull();
  });

  it("makes no more float weights than its bound: past it, the model goes to the engine as it is", async () => {
    const b = await readBundle(corpus.read("accept/default.dpedge"));
    const external = new Map([[WEIGHTS_LOCATION, b.encoder.weights]]);
    const need = lowerMatMulNBits(b.encoder.model, external)!.weights.byteLength;
    expect(need).toBeLessThanOrEqual(MAX_LOWERED_BYTES);
    expect(lowerMatMulNBits(b.encoder.model, external, need)).not.toBeNull();
    expect(lowerMatMulNBits(b.encoder.model, external, need - 1)).toBeNull();
  });
});
