/**
 * The runtime against the conformance corpora (format/1/corpus/cases.json; test/corpus.ts), in
 * Node: every refused file with its code and path, every accepted file read with its labels,
 * token ids, query refusals and scores (bit for bit when tolerance.scores is 0), every text
 * rule, every number, every arithmetic case (section 7.1's exp, log, log1p, expm1 and the
 * accountant's bound, bit for bit); the engine bundles end to end on
 * onnxruntime-node (the reference engine's kernels: embeddings within tolerance.embedding per
 * coordinate) and through a stand-in engine that answers with the corpus's embeddings (the
 * Classifier's load check and query rules, for TFLite bundles too, which no JavaScript engine runs).
 * A case with "pack" is read with that encoder pack (format 1.1); each refuse_pack file is
 * refused as an encoder pack.
 */
import { describe, expect, it } from "vitest";
import { Classifier, nodeEngine } from "../src/index.js";
import type { Engine } from "../src/engine.js";
import { BundleError, InputError } from "../src/errors.js";
import { readBundle, readPack, type Bundle, type EncoderPack } from "../src/reader.js";
import { headEpsilon } from "../src/accounting.js";
import { short } from "../src/describe.js";
import { exp, expm1, log, log1p } from "../src/exactmath.js";
import { argmax, Scorer } from "../src/scoring.js";
import { escape, escapeJson, labelKey, showsSomething, unassigned, unprintable } from "../src/text.js";
import { TextTokenizer } from "../src/tokenizer.js";
import { corpora, type AcceptCase, type Corpus } from "./corpus.js";

async function refusal(p: Promise<unknown>): Promise<{ code: string; path: string; message: string }> {
  try {
    await p;
  } catch (e) {
    if (!(e instanceof BundleError || e instanceof InputError)) throw e;
    return { code: e.code, path: e.path, message: e.message };
  }
  return { code: "accepted", path: "", message: "" };
}

/** An engine that answers with the corpus's embeddings, by token ids. */
function standIn(c: AcceptCase): Engine {
  const answers = new Map<string, number[]>();
  if (c.check) answers.set(c.check.token_ids.join(), c.check.embedding);
  for (const q of c.queries ?? []) if (q.embedding) answers.set(q.token_ids!.join(), q.embedding);
  return {
    name: "stand-in", formats: ["onnx", "tflite"], bounded: "nothing",
    load: async () => undefined,
    embed: async (ids) => Float32Array.from(answers.get(ids.join()) ?? []),
    release: async () => undefined,
  };
}

/** The encoder pack a case gives the reader with its bundle, or undefined. */
async function packOf(corpus: Corpus, c: { pack?: string }): Promise<EncoderPack | undefined> {
  return c.pack === undefined ? undefined : readPack(corpus.read(c.pack));
}

/** The IEEE double's 64 bits in hex (16 lowercase digits), as the corpus writes them. */
function bits(x: number): string {
  const v = new DataView(new ArrayBuffer(8));
  v.setFloat64(0, x, false);
  return v.getBigUint64(0, false).toString(16).padStart(16, "0");
}

/**
 * A vector's scores against the corpus's: with tolerance.scores 0 (section 7: every reader
 * computes the same bits) bit for bit, else within the tolerance; the label (argmax, ties to
 * the lower index) either way.
 */
function expectScores(corpus: Corpus, b: Bundle, scorer: Scorer, row: { embedding: number[]; scores: number[]; label: string }): void {
  const s = scorer.scores(Float32Array.from(row.embedding));
  expect(s.length).toBe(row.scores.length);
  const tolerance = corpus.cases.tolerance.scores;
  if (tolerance === 0) {
    expect(Array.from(s, bits), `scores' bits of ${JSON.stringify(row.scores)}`).toEqual(row.scores.map(bits));
  } else {
    const worst = Math.max(...row.scores.map((x, i) => Math.abs(x - s[i]!)));
    expect(worst).toBeLessThanOrEqual(tolerance);
  }
  expect(b.labels[argmax(s)]).toBe(row.label);
  expect(Math.abs(s.reduce((a, x) => a + x, 0) - 1)).toBeLessThanOrEqual(1e-9);
}

describe.each(corpora)("$name", (corpus) => {
  const { cases } = corpus;

  it.skipIf(!cases.refuse.length)(`refuses each of the ${cases.refuse.length} refuse/ files with its code and path`, async () => {
    const wrong: string[] = [];
    for (const c of cases.refuse) {
      const got = await refusal(readBundle(corpus.read(c.file), { pack: await packOf(corpus, c) }));
      if (got.code !== c.code || got.path !== c.path) wrong.push(`${c.file}: ${got.code} at ${got.path}, want ${c.code} at ${c.path}`);
      expect(got.message).not.toMatch(/[\x1b\u202e]/);
    }
    expect(wrong).toEqual([]);
  });

  const refusePack = cases.refuse_pack ?? [];
  it.skipIf(!refusePack.length)(`refuses each of the ${refusePack.length} refuse_pack files as an encoder pack with its code and path`, async () => {
    const wrong: string[] = [];
    for (const c of refusePack) {
      const got = await refusal(readPack(corpus.read(c.file), { expect: c.expect }));
      if (got.code !== c.code || got.path !== c.path) wrong.push(`${c.file}: ${got.code} at ${got.path}, want ${c.code} at ${c.path}`);
    }
    expect(wrong).toEqual([]);
  });

  it.each(cases.accept)("reads, tokenizes and scores $file", async (c) => {
    const b = await readBundle(corpus.read(c.file), { pack: await packOf(corpus, c) });
    expect(b.encoderPack === null).toBe(c.pack === undefined);
    expect(b.labels).toEqual(c.labels);
    const tok = new TextTokenizer(b.encoder.tokenizer, b.encoder.maxLength, b.encoder.textPrefix);
    const scorer = new Scorer(b);
    if (c.check) expect(tok.encode(b.encoder.checkText)).toEqual(c.check.token_ids);
    for (const q of c.queries ?? []) {
      if (q.code) expect(tok.hasToken(q.text), JSON.stringify(q.text)).toBe(false);
      else expect(tok.encode(q.text), JSON.stringify(q.text)).toEqual(q.token_ids);
      if (q.embedding) expectScores(corpus, b, scorer, q as Required<typeof q>);
    }
    for (const v of c.vectors ?? []) expectScores(corpus, b, scorer, v);
  });

  it.each(cases.accept.filter((c) => c.engine))("answers $file end to end on onnxruntime-node", async (c) => {
    const load = Classifier.load(corpus.read(c.file), { engine: nodeEngine({ threads: 1 }), encoderPack: await packOf(corpus, c) });
    if (c.engine === "tflite") {
      expect(await refusal(load)).toMatchObject({ code: "engine.unavailable", path: "encoder.format" });
      return;
    }
    if (c.load) {
      expect(await refusal(load)).toMatchObject(c.load);
      return;
    }
    const clf = await load;
    try {
      for (const q of c.queries!) {
        if (q.code) {
          expect(await refusal(clf.classify([q.text]))).toMatchObject({ code: q.code, path: "" });
          continue;
        }
        const [emb] = await clf.embed([q.text]);
        const worst = Math.max(...q.embedding!.map((x, i) => Math.abs(x - emb![i]!)));
        expect(worst, q.text).toBeLessThanOrEqual(corpus.cases.tolerance.embedding);
        if (q.margin! > corpus.cases.tolerance.label_margin) expect(clf.score(emb!).label, q.text).toBe(q.label);
      }
    } finally {
      await clf.close();
    }
  });

  it.each(cases.accept.filter((c) => c.check))("loads and classifies $file through a stand-in engine", async (c) => {
    const load = Classifier.load(corpus.read(c.file), { engine: () => standIn(c), encoderPack: await packOf(corpus, c) });
    if (c.load) {
      expect(await refusal(load)).toMatchObject(c.load);
      return;
    }
    const clf = await load;
    for (const q of c.queries ?? []) {
      if (q.code) expect(await refusal(clf.classify([q.text]))).toMatchObject({ code: q.code });
      else if (q.embedding) expect((await clf.classify([q.text]))[0]!.label).toBe(q.label);
    }
  });

  it.skipIf(!cases.text.length)("applies the text rules to each text case", () => {
    for (const r of cases.text) {
      expect({
        escaped: escape(r.text), escaped_json: escapeJson(JSON.stringify(r.text)), key: labelKey(r.text),
        unprintable: unprintable(r.text), unassigned: unassigned(r.text), shows_something: showsSomething(r.text),
      }, JSON.stringify(r.text)).toEqual({
        escaped: r.escaped, escaped_json: r.escaped_json, key: r.key, unprintable: r.unprintable,
        unassigned: r.unassigned, shows_something: r.shows_something,
      });
    }
  });

  const numbers = cases.numbers ?? [];
  it.skipIf(!numbers.length)(`writes each of the ${numbers.length} numbers by the contract's rule`, () => {
    expect(numbers.map((r) => short(r.value))).toEqual(numbers.map((r) => r.text));
  });

  const arithmetic = cases.arithmetic;
  if (arithmetic === undefined) {
    const why = `${corpus.name}: its cases.json has no "arithmetic" key (a corpus older than section 7.1): ` +
      "exp, log, log1p, expm1 and head_epsilon are not compared bit for bit";
    console.warn(`dpedge web tests: ${why}`);
    it.skip(`arithmetic cases: skipped, ${why}`, () => undefined);
  } else {
    it(`computes each of the ${arithmetic.length} arithmetic cases bit for bit (section 7.1 and the accountant's bound)`, () => {
      const fns: Record<string, (...a: number[]) => number> = {
        exp, log, log1p, expm1, head_epsilon: (z, q, t, d) => headEpsilon(z!, q!, t!, d!),
      };
      const wrong: string[] = [];
      for (const r of arithmetic) {
        const fn = fns[r.function];
        if (fn === undefined) {
          wrong.push(`${r.function}: not a function this reader knows (${Object.keys(fns).join(", ")})`);
          continue;
        }
        const got = bits(fn(...r.args));
        if (got !== r.bits) wrong.push(`${r.function}(${r.args.join(", ")}) = ${got}, expected ${r.bits}`);
      }
      expect(wrong).toEqual([]);
    });
  }
});
