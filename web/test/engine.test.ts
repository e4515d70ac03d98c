/**
 * Node's engine budgets (src/engines/node_process.ts): a load or a run past its time or memory
 * budget is stopped by killing the engine's process, refused with engine.budget at load or
 * query.engine for a query, and the next query starts the engine again. The in-process engine
 * gives the same embeddings, for a statistics bundle on its encoder pack's encoder too.
 */
import { createRequire } from "node:module";
import { describe, expect, it } from "vitest";
import { BudgetExceeded, WrongIO, type Engine } from "../src/engine.js";
import { NodeProcessEngine } from "../src/engines/node_process.js";
import { Classifier, nodeEngine } from "../src/index.js";
import { readBundle, readPack } from "../src/reader.js";
import { TextTokenizer } from "../src/tokenizer.js";
import { corpora } from "./corpus.js";

const committed = corpora[0]!;
const real = corpora.find((c) => c.name === "real corpus");
const modulePath = createRequire(import.meta.url).resolve("onnxruntime-node");
const onLinux = process.platform === "linux";

async function engineFor(file: Uint8Array, memoryBytes = 2 ** 27) {
  const b = await readBundle(file);
  const engine = new NodeProcessEngine({ modulePath, session: { intraOpNumThreads: 1 }, memoryBytes });
  const io = { inputs: b.encoder.inputs, output: b.encoder.output, dim: b.encoder.dim };
  const tok = new TextTokenizer(b.encoder.tokenizer, b.encoder.maxLength);
  return { b, engine, io, long: tok.encode("the quick brown fox jumps over the lazy dog ".repeat(60)) };
}

/** An engine that loads, answers the check text with the exporter's embedding, and then fails as told. */
function failing(check: Float32Array, at: "load" | "check" | "query", error: Error): Engine {
  let first = true;
  return {
    name: "failing", formats: ["onnx"], bounded: "time",
    load: async () => {
      if (at === "load") throw error;
    },
    embed: async () => {
      if (at !== "load" && (at === "check" || !first)) throw error;
      first = false;
      return check;
    },
    release: async () => undefined,
  };
}

describe("the Classifier's refusals for an engine's failures", () => {
  const cases: [string, "load" | "check" | "query", Error, { code: string; path: string }][] = [
    ["a load past its budget", "load", new BudgetExceeded("slow"), { code: "engine.budget", path: "encoder.model" }],
    ["a load that fails", "load", new Error("bad model"), { code: "engine.load", path: "encoder.model" }],
    ["other inputs", "load", new WrongIO("encoder.inputs", "no input_ids"), { code: "engine.io", path: "encoder.inputs" }],
    ["the check run past its budget", "check", new BudgetExceeded("slow"), { code: "engine.budget", path: "encoder.model" }],
    ["the check run failing", "check", new Error("crash"), { code: "engine.load", path: "encoder.model" }],
    ["a query past its budget", "query", new BudgetExceeded("slow"), { code: "query.engine", path: "" }],
    ["a query failing", "query", new Error("crash"), { code: "query.engine", path: "" }],
  ];
  it.each(cases)("refuses %s", async (_, at, error, want) => {
    const bytes = committed.read("accept/default.dpedge");
    const check = (await readBundle(bytes)).encoder.checkEmbedding;
    const run = Classifier.load(bytes, { engine: () => failing(check, at, error) }).then((clf) => clf.classify(["wake me up"]));
    await expect(run).rejects.toMatchObject(want);
  });
});

describe("Node's engine budgets", () => {
  it("kills a load that takes longer than its time budget, and loads again afterwards", async () => {
    const { b, engine, io, long } = await engineFor(committed.read("accept/default.dpedge"));
    await expect(engine.load(b.encoder.model, b.encoder.weights, io, 0.001)).rejects.toBeInstanceOf(BudgetExceeded);
    await engine.load(b.encoder.model, b.encoder.weights, io, 30);
    expect((await engine.embed(long, 30)).length).toBe(b.encoder.dim);
    await engine.release();
  });

  it.skipIf(!onLinux)("refuses a load that grows the engine's memory past its budget (engine.budget)", async () => {
    const load = Classifier.load(committed.read("accept/default.dpedge"), { engine: nodeEngine({ memoryBytes: 1 }) });
    await expect(load).rejects.toMatchObject({ code: "engine.budget", path: "encoder.model" });
  });

  it.skipIf(!real)("kills a run past its time budget and answers the next one", async () => {
    const { b, engine, io, long } = await engineFor(real!.read("accept/default.dpedge"));
    await engine.load(b.encoder.model, b.encoder.weights, io, 30);
    const first = await engine.embed(long, 30);
    await expect(engine.embed(long, 0.002)).rejects.toBeInstanceOf(BudgetExceeded); // 256 tokens: tens of ms
    expect(await engine.embed(long, 30)).toEqual(first); // started again, model loaded again
    await engine.release();
  });

  it("gives the same embeddings in this process as in the engine's process", async () => {
    const bytes = committed.read("accept/tables.dpedge");
    const [a, b] = await Promise.all([Classifier.load(bytes, { engine: nodeEngine({ threads: 1 }) }),
      Classifier.load(bytes, { engine: nodeEngine({ threads: 1, inProcess: true }) })]);
    const texts = ["wake me up at 6:30 tomorrow", "Turn OFF the lights in the LIVING room!!!"];
    expect(await a.embed(texts)).toEqual(await b.embed(texts));
    expect(a.info()["engine_bounds"]).toBe(onLinux ? "time and memory" : "time");
    expect(b.info()["engine_bounds"]).toBe("nothing");
    await Promise.all([a.close(), b.close()]);
  });
});

describe("a statistics bundle (format 1.1)", () => {
  it("runs on its encoder pack's encoder, in this process as in the engine's process", async () => {
    const [bytes, packBytes] = [committed.read("accept/statistics.dpedge"), committed.read("packs/tiny-onnx.dpedge-encoder")];
    const pack = await readPack(packBytes);
    const [a, b] = await Promise.all([Classifier.load(bytes, { engine: nodeEngine({ threads: 1 }), encoderPack: packBytes }),
      Classifier.load(bytes, { engine: nodeEngine({ threads: 1, inProcess: true }), encoderPack: pack })]);
    const texts = ["wake me up at 6:30 tomorrow", "Turn OFF the lights in the LIVING room!!!"];
    expect(await a.embed(texts)).toEqual(await b.embed(texts));
    const info = a.info() as { encoder: Record<string, unknown>; sizes_bytes: Record<string, number> };
    expect(info.encoder["pack_sha256"]).toBe(pack.sha256);
    expect(Object.keys(info.sizes_bytes)).toContain("encoder_pack");
    expect(Object.keys(info.sizes_bytes)).not.toContain("encoder");
    expect(info.sizes_bytes["file"]).toBeLessThan(packBytes.length);
    await Promise.all([a.close(), b.close()]);
    await expect(Classifier.load(bytes, { engine: nodeEngine({ inProcess: true }) }))
      .rejects.toMatchObject({ code: "pack.missing", path: "encoder_pack" });
  });

  it("names no pack in a bundle with its own encoder", async () => {
    const b = await readBundle(committed.read("accept/tables.dpedge"));
    expect(b.encoderPack).toBeNull();
    const copied = { ...(await readPack(committed.read("packs/tiny-onnx.dpedge-encoder"))) }; // a pack readPack did not make
    await expect(readBundle(committed.read("accept/statistics.dpedge"), { pack: copied })).rejects.toBeInstanceOf(TypeError);
  });
});
