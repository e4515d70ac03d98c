/**
 * Hostile input: whatever bytes arrive, the reader answers with a Bundle or one BundleError,
 * never another exception, and bounds its work before it allocates (fast-check properties).
 * Bytes are sealed with a valid digest where the point is to reach the parser behind it.
 */
import { encode } from "@msgpack/msgpack";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { readDocument } from "../src/container.js";
import { SCHEMA } from "../src/contract.js";
import { BundleError } from "../src/errors.js";
import { checkModel } from "../src/model_family.js";
import { readBundle } from "../src/reader.js";
import { sha256, sha256Js } from "../src/sha256.js";
import { checkTokenizerJson } from "../src/tokenizer_family.js";
import { corpora } from "./corpus.js";

const DIGEST_TAIL = Uint8Array.from(Buffer.from(SCHEMA.container.digest_tail_hex, "hex"));

/** A file of `prefix` followed by the digest entry: what the exporter writes after the document. */
async function seal(prefix: Uint8Array): Promise<Uint8Array> {
  const digest = await sha256(prefix);
  const out = new Uint8Array(prefix.length + DIGEST_TAIL.length + 32);
  out.set(prefix);
  out.set(DIGEST_TAIL, prefix.length);
  out.set(digest, prefix.length + DIGEST_TAIL.length);
  return out;
}

/** Resolves to "ok" or "refused"; anything but a BundleError fails the property. */
async function outcome(data: Uint8Array): Promise<string> {
  try {
    await readBundle(data);
    return "ok";
  } catch (e) {
    if (e instanceof BundleError && e.code in SCHEMA.errors && !e.message.includes("\n")) return "refused";
    throw e;
  }
}

describe("the reader on hostile bytes", () => {
  it("refuses arbitrary bytes with one BundleError", async () => {
    await fc.assert(fc.asyncProperty(fc.uint8Array({ maxLength: 4096 }), async (b) => {
      expect(await outcome(b)).toBe("refused");
    }), { numRuns: 500 });
  });

  it("refuses arbitrary sealed bytes (past the digest) with one BundleError", async () => {
    await fc.assert(fc.asyncProperty(fc.uint8Array({ maxLength: 4096 }), async (b) => {
      expect(await outcome(await seal(b))).toBe("refused");
    }), { numRuns: 500 });
  });

  it("refuses sealed msgpack documents of any shape with one BundleError", async () => {
    const value = fc.letrec((tie) => ({
      v: fc.oneof({ depthSize: "small" }, fc.constant(null), fc.boolean(), fc.integer(), fc.double(), fc.string(),
        fc.uint8Array({ maxLength: 16 }), fc.array(tie("v"), { maxLength: 5 }),
        fc.dictionary(fc.oneof(fc.constantFrom("format", "version", "labels", "encoder", "sha256"), fc.string()), tie("v"),
          { maxKeys: 5 })),
    })).v;
    await fc.assert(fc.asyncProperty(value, async (v) => {
      const doc = { format: "dpedge", version: [1, 0], ...(typeof v === "object" && v !== null && !Array.isArray(v) &&
        !(v instanceof Uint8Array) ? v : { labels: v }) };
      const body = encode(doc);
      // One entry more in the map header: the digest entry the seal appends.
      const prefix = new Uint8Array(body);
      if (prefix[0]! >= 0x80 && prefix[0]! < 0x8f) prefix[0]! += 1;
      expect(await outcome(await seal(prefix))).toBe("refused");
    }), { numRuns: 300 });
  });

  it("bounds nesting, container lengths and the value budget from the headers, before decoding", () => {
    const code = (data: Uint8Array): string => {
      try {
        readDocument(data);
      } catch (e) {
        return (e as BundleError).code;
      }
      return "accepted";
    };
    const deep = new Uint8Array(5000).fill(0x91); // [[[[...]]]]
    expect(code(deep)).toBe("container.depth");
    const huge = Uint8Array.of(0x81, 0xa1, 0x78, 0xdd, 0xff, 0xff, 0xff, 0xff); // {"x": array of 2^32 - 1}
    expect(code(huge)).toBe("container.count");
    // 5 KB of arrays declaring 65,535 entries each: 76 MiB if a decoder allocated first.
    const budget = new Uint8Array(5001);
    budget[0] = 0xdc;
    budget[1] = 0x03;
    budget[2] = 0xe8;
    for (let i = 3; i + 3 <= budget.length; i += 3) budget.set([0xdc, 0xff, 0xff], i);
    expect(code(budget)).toBe("container.count");
    for (const ext of [[0xd4, 5, 0], [0xd6, 0xff, 0, 0, 0, 0], [0xc7, 0, 5]]) {
      expect(code(Uint8Array.of(0x81, 0xa1, 0x78, ...ext))).toBe("container.extension");
    }
  });

  it("refuses any tokenizer.json outside the family with one BundleError", () => {
    fc.assert(fc.property(fc.oneof(fc.json(), fc.string()), (text) => {
      try {
        checkTokenizerJson(text);
      } catch (e) {
        expect(e).toBeInstanceOf(BundleError);
        return;
      }
      throw new Error("accepted");
    }), { numRuns: 2000 });
  });

  it("refuses arbitrary model bytes with one BundleError (ONNX and TFLite walks)", () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 2048 }), fc.nat(1 << 20), (b, weights) => {
      for (const check of [() => checkModel("onnx", b, weights), () => checkModel("onnx", b, weights, "mpnet"), () => checkModel("tflite", b, 0)]) {
        try {
          check();
        } catch (e) {
          expect(e).toBeInstanceOf(BundleError);
        }
      }
    }), { numRuns: 3000 });
  });

  it("hashes like WebCrypto without it (pages served over plain http have none)", async () => {
    await fc.assert(fc.asyncProperty(fc.uint8Array({ maxLength: 300 }), async (b) => {
      expect(Buffer.from(sha256Js(b)).toString("hex")).toBe(Buffer.from(await sha256(b)).toString("hex"));
    }), { numRuns: 400 });
  });
});

describe("mutated bundles", () => {
  it("answers every byte-level mutation of a valid bundle, resealed, with a Bundle or one BundleError", async () => {
    const base = corpora[0]!.read("accept/variants/without-optional-fields.dpedge");
    const prefix = base.subarray(0, base.length - 41);
    const seen = new Set<string>();
    await fc.assert(fc.asyncProperty(
      fc.array(fc.tuple(fc.nat(prefix.length - 1), fc.integer({ min: 0, max: 255 }), fc.constantFrom("set", "insert", "delete")),
        { minLength: 1, maxLength: 4 }),
      async (edits) => {
        let b = Uint8Array.from(prefix);
        for (const [at, byte, op] of edits) {
          const i = Math.min(at, b.length - 1);
          if (op === "set") b[i] = byte;
          else if (op === "insert") b = Uint8Array.from([...b.subarray(0, i), byte, ...b.subarray(i)]);
          else b = Uint8Array.from([...b.subarray(0, i), ...b.subarray(i + 1)]);
        }
        seen.add(await outcome(await seal(b)));
      }), { numRuns: 300 });
    expect(seen.has("refused")).toBe(true);
  });
});
