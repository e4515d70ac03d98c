/**
 * The TypeScript runtime against the Python runtime, in Node, on the golden data the Java core
 * is held to (android_demo/golden.py): the same refusals with the same key phrases, the same
 * token ids, buckets, scores and labels, and, with onnxruntime-node (the same CPU kernels as
 * Python's onnxruntime), the same embeddings, so every label equal and every score within 1e-5.
 */
import { describe, expect, it } from "vitest";
import { Classifier, nodeEngine } from "../src/index.js";
import { BundleError } from "../src/errors.js";
import { readBundle, type Bundle } from "../src/reader.js";
import { argmax, Scorer } from "../src/scoring.js";
import { TextTokenizer } from "../src/tokenizer.js";
import { checkTokenizerJson } from "../src/tokenizer_family.js";
import { TFLITE_REFUSED } from "../src/classifier.js";
import { f32, golden, HAVE_FIXTURES, readFixture, SKIP_MESSAGE } from "./fixtures.js";

/** Scores of the scored bundles (float64 arithmetic on the same float32 inputs) agree to this, relative. */
const SCORING_RTOL = 1e-9;
/** End to end in Node, every score within this of Python's (the acceptance criterion). */
const NODE_SCORE_ATOL = 1e-5;

async function bundleOf(file: string): Promise<Bundle> {
  return readBundle(readFixture("golden", file));
}

describe.skipIf(!HAVE_FIXTURES)(`golden conformance in Node (${HAVE_FIXTURES ? "fixtures found" : SKIP_MESSAGE})`, () => {
  it("refuses every malformed bundle in one line carrying the Python reader's phrases", async () => {
    const g = golden();
    const problems: string[] = [];
    for (const m of g.malformed) {
      try {
        await readBundle(readFixture("golden", m.file));
        problems.push(`${m.file}: accepted`);
      } catch (e) {
        if (!(e instanceof BundleError)) {
          problems.push(`${m.file}: ${String(e)} (not a BundleError)`);
          continue;
        }
        const missing = m.phrases.filter((p) => !e.message.includes(p));
        if (missing.length) problems.push(`${m.file}: said ${JSON.stringify(e.message)}, without ${JSON.stringify(missing)}`);
        if (e.message.includes("\n")) problems.push(`${m.file}: the message is not one line`);
      }
    }
    expect(problems).toEqual([]);
    expect(g.malformed.length).toBeGreaterThan(480);
  });

  it("loads every valid variant", async () => {
    const g = golden();
    for (const v of g.variants) {
      await expect(readBundle(readFixture("golden", v.file)), v.file).resolves.toBeDefined();
    }
    expect(g.variants.length).toBeGreaterThan(10);
  });

  it("scores every derived bundle (each branch of the scoring rule) as Python does", async () => {
    const g = golden();
    let worst = 0;
    let cases = 0;
    for (const s of g.scored) {
      const b = await bundleOf(s.file);
      const scorer = new Scorer(b);
      expect(scorer.plainVotes, s.file).toBe(s.plain_votes);
      expect(scorer.boost, s.file).toBeCloseTo(s.prior_boost, 12);
      for (const c of s.cases) {
        const x = f32(c.embedding);
        const scores = scorer.scores(x);
        expect(scorer.hasher === null ? [] : scorer.hasher.buckets(Float64Array.from(x)), s.file).toEqual(c.buckets);
        c.scores.forEach((want, i) => {
          const err = Math.abs(scores[i]! - want) / Math.max(Math.abs(want), 1e-300);
          worst = Math.max(worst, want === 0 ? Math.abs(scores[i]!) : err);
        });
        expect(b.labels[argmax(scores)], s.file).toBe(c.label);
        cases++;
      }
    }
    console.log(`scored bundles: ${cases} cases, largest relative score difference ${worst.toExponential(2)}`);
    expect(worst).toBeLessThan(SCORING_RTOL);
    expect(cases).toBeGreaterThan(400);
  });

  it("tokenizes every golden text of every bundle to the Python runtime's ids", async () => {
    const g = golden();
    let n = 0;
    for (const entry of g.bundles) {
      const e = (await bundleOf(entry.file)).encoder;
      const tok = new TextTokenizer(e.tokenizerJson, checkTokenizerJson(e.tokenizerJson), e.maxLength, e.textPrefix);
      for (const c of entry.cases) {
        expect(tok.encode(c.text), `${entry.file}: ${JSON.stringify(c.text).slice(0, 80)}`).toEqual(c.token_ids);
        n++;
      }
    }
    expect(n).toBe(4 * g.bundles[0]!.cases.length);
  });

  it("classifies every golden text of the ONNX bundles end to end like Python: labels equal, scores within 1e-5", async () => {
    const g = golden();
    const summary: string[] = [];
    let onnx = 0;
    for (const entry of g.bundles) {
      const bytes = readFixture("golden", entry.file);
      const b = await readBundle(bytes);
      if (b.encoder.format !== "onnx") continue;
      onnx++;
      const clf = await Classifier.load(bytes, { engine: nodeEngine({ threads: 1 }) });
      let embDiff = 0;
      let scoreDiff = 0;
      let labels = 0;
      for (const c of entry.cases) {
        const [emb] = await clf.embed([c.text]);
        const want = f32(c.embedding);
        for (let i = 0; i < want.length; i++) embDiff = Math.max(embDiff, Math.abs(emb![i]! - want[i]!));
        const p = clf.score(emb!);
        p.scores.forEach((s, i) => (scoreDiff = Math.max(scoreDiff, Math.abs(s.score - c.scores[i]!))));
        if (clf.scorer.hasher) expect(clf.scorer.hasher.buckets(Float64Array.from(emb!))).toEqual(c.buckets);
        expect(p.label, `${entry.file}: ${JSON.stringify(c.text).slice(0, 80)}`).toBe(c.label);
        labels++;
      }
      await clf.close();
      summary.push(`${entry.file}: ${labels} labels equal, embeddings within ${embDiff.toExponential(1)}, scores within ${scoreDiff.toExponential(1)}`);
      expect(scoreDiff).toBeLessThanOrEqual(NODE_SCORE_ATOL);
    }
    console.log(summary.join("\n"));
    expect(onnx).toBe(3); // class statistics alone, with vote tables, vote tables alone
  });

  it("refuses a TFLite bundle in one line at load, and still reads its facts", async () => {
    const entry = golden().bundles.find((e) => e.file.includes("tflite"))!;
    const bytes = readFixture("golden", entry.file);
    const b = await readBundle(bytes);
    expect(b.encoder.format).toBe("tflite");
    await expect(Classifier.load(bytes)).rejects.toThrow(TFLITE_REFUSED);
  });
});
