/**
 * The engine's warm-up (src/engines/warm_up.ts, warmUpEngine in src/browser.ts), which
 * WorkerClassifier's worker runs while a bundle downloads, on onnxruntime-web's WebAssembly in Node:
 *
 * - its model, built in memory, loads and runs on every kernel the engine has (the int8 and float32
 *   rewrites and MatMulNBits as it is), and its operators are the encoders' family's;
 * - it changes no answer: a classifier loaded after a warm-up, and after a warm-up that failed,
 *   answers every query of the corpus's default bundle bit for bit as one loaded without it (labels,
 *   every score, the refusal codes). The failure is provoked inside onnxruntime-web's session
 *   creation (the session made, then an error), after onnxruntime-web has started.
 */
import * as ortWeb from "onnxruntime-web/wasm";
import { describe, expect, it, vi } from "vitest";
import { Classifier, warmUpEngine, webEngine } from "../src/browser.js";
import { SCHEMA } from "../src/contract.js";
import { warmUp, warmUpModel } from "../src/engines/warm_up.js";
import type { OrtModule } from "../src/engines/onnxruntime.js";
import { corpora } from "./corpus.js";

ortWeb.env.wasm.numThreads = 1; // as webEngine sets it outside a cross-origin isolated page

/** How many of the next sessions of the warm-up's model fail (after onnxruntime-web made them). */
const provoke = { failures: 0 };
{
  const sessions = ortWeb.InferenceSession as unknown as { create(model: Uint8Array, options?: object): Promise<{ release(): Promise<void> }> };
  const real = sessions.create.bind(sessions);
  const warmUpGraph = new TextEncoder().encode("dpedge warm-up");
  const isWarmUp = (model: Uint8Array): boolean => model.some((_, i) => warmUpGraph.every((b, j) => model[i + j] === b));
  vi.spyOn(sessions, "create").mockImplementation(async (model, options) => {
    const session = await real(model, options);
    if (provoke.failures > 0 && isWarmUp(model)) {
      provoke.failures--;
      await session.release();
      throw new Error("a warm-up failure provoked by the test");
    }
    return session;
  });
}

const ort = ortWeb as unknown as OrtModule;

describe("the warm-up's model", () => {
  it.each(["int8", "float32", "matmulnbits"] as const)("loads and runs with the kernel %s", async (kernel) => {
    await expect(warmUp(ort, kernel, { executionProviders: ["wasm"] })).resolves.toBeUndefined();
  });

  it("uses only operators of the encoders' family", () => {
    const family = new Set([...SCHEMA.onnx.ops, ...SCHEMA.families.bert.onnx_ops].map(([, op]) => op));
    const text = new TextDecoder("latin1").decode(warmUpModel());
    const ops = ["Gather", "LayerNormalization", "MatMulNBits", "MatMul", "Transpose", "Softmax", "Erf", "Cast", "Unsqueeze",
      "ReduceSum", "ReduceL2", "Div", "Mul", "Add", "Sub"];
    for (const op of ops) {
      expect(family.has(op), op).toBe(true);
      expect(text.includes(op), op).toBe(true);
    }
  });
});

describe.each(corpora.map((c) => [c.name, c] as const))("a classifier after a warm-up (%s)", (_, corpus) => {
  it("answers bit for bit as without it, also after a warm-up that failed", async () => {
    const c = corpus.cases.accept.find((a) => a.file === "accept/default.dpedge")!;
    const bytes = corpus.read(c.file);
    const texts = c.queries!.map((q) => q.text);
    const answers = async (): Promise<string> => {
      const clf = await Classifier.load(bytes, { engine: webEngine({ threads: 1 }) });
      const out: unknown[] = [clf.checkCosine];
      for (const t of texts) {
        try {
          out.push((await clf.classify([t], { topK: 3 }))[0]);
        } catch (e) {
          out.push((e as { code: string }).code);
        }
      }
      await clf.close();
      return JSON.stringify(out);
    };
    provoke.failures = 1;
    expect(await warmUpEngine({ threads: 1 })).toBe(false);
    expect(provoke.failures).toBe(0);
    const afterFailure = await answers();
    const cold = await answers();
    expect(await warmUpEngine({ threads: 1 })).toBe(true);
    const afterWarmUp = await answers();
    expect(afterFailure).toBe(cold);
    expect(afterWarmUp).toBe(cold);
  });
});
