/**
 * The tokenizer family (runtime/bundle/tokenizer_family.py): a bundle's tokenizer.json must be
 * BERT's WordPiece pipeline and nothing else, with bounded sizes, checked before any tokenizer
 * library parses a byte of it. The same rules in the same order with the same words as the
 * Python reader; the bounds come from the generated schema module.
 */
import { BundleError } from "./errors.js";
import {
  FIELDS, MAX_ADDED_TOKENS, MAX_INPUT_CHARS_PER_WORD, MAX_PREFIX_CHARS_WORDPIECE, MAX_TOKEN_CHARS,
  MAX_TOKENIZER_JSON_CHARS, MAX_VOCAB_SIZE, TOKENIZER_DECODER, TOKENIZER_KEYS, TOKENIZER_MODEL,
  TOKENIZER_NORMALIZER, TOKENIZER_POST_PROCESSOR, TOKENIZER_PRE_TOKENIZER, TOKENIZER_REQUIRED,
} from "./generated/schema.js";
import { JsonRefused, JsonSyntaxError, parseJson } from "./json.js";
import { comparePy, jsonDumps, type Value, type ValueMap } from "./pyrepr.js";
import { pyLen } from "./text.js";

const FIELD = "encoder.tokenizer_json";
/** The tokenizer's own truncation and padding lengths are bounded like encoder.max_length. */
const LENGTH_HIGH = Number(FIELDS.find((f) => f.path === "encoder.max_length")!.high);

class Refused extends Error {}

function fail(why: string): never {
  throw new Refused(why);
}

function path(...keys: string[]): string {
  return keys.filter((k) => k).join(".");
}

function show(v: Value | undefined): string {
  const text = jsonDumps(v === undefined ? null : v);
  return text.length <= 60 ? text : text.slice(0, 57) + "...";
}

const isMap = (v: Value | undefined): v is ValueMap => v instanceof Map;
const isInt = (v: Value | undefined): v is bigint => typeof v === "bigint";

/** Python's == between JSON values: True == 1, 1 == 1.0, lists element by element. */
export function pyEq(a: Value | undefined, b: Value | undefined): boolean {
  const numeric = (v: Value | undefined): number | bigint | null =>
    typeof v === "boolean" ? (v ? 1n : 0n) : typeof v === "bigint" || typeof v === "number" ? v : null;
  const x = numeric(a);
  const y = numeric(b);
  if (x !== null || y !== null) return x !== null && y !== null && x == y; // eslint-disable-line eqeqeq
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((v, i) => pyEq(v, b[i]));
  }
  if (isMap(a) || isMap(b)) {
    return isMap(a) && isMap(b) && a.size === b.size && [...a].every(([k, v]) => b.has(k) && pyEq(v, b.get(k)));
  }
  if (a instanceof Uint8Array || b instanceof Uint8Array) return false;
  return (a ?? null) === (b ?? null);
}

function map(v: Value | undefined, where: string, keys: readonly string[], required: readonly string[] = []): ValueMap {
  if (!isMap(v)) fail(`${where} must be an object, got ${show(v)}`);
  for (const k of required) {
    if (!v.has(k)) fail(where ? `missing '${path(where, k)}'` : `missing '${k}'`);
  }
  const extra = [...v.keys()].filter((k) => !keys.includes(k)).sort(comparePy);
  if (extra.length) {
    fail(where ? `${path(where, extra[0]!)} is not part of the family` : `'${extra[0]}' is not part of the family`);
  }
  return v;
}

function typed(v: Value | undefined, where: string, expected: string): void {
  if (!isMap(v) || !pyEq(v.get("type") ?? null, expected) || typeof v.get("type") !== "string") {
    const got = isMap(v) ? (v.get("type") ?? null) : v;
    fail(`${where}.type is ${show(got)}, expected ${show(expected)}`);
  }
}

function bool(v: Value | undefined, where: string, nullable = false): void {
  if (!(typeof v === "boolean" || (nullable && v === null))) {
    fail(`${where} must be ${nullable ? "true, false or null" : "true or false"}, got ${show(v)}`);
  }
}

function int(v: Value | undefined, where: string, low: number, high: number): bigint {
  if (!isInt(v) || v < low || v > high) fail(`${where} must be an integer in ${low}..${high}, got ${show(v)}`);
  return v;
}

function str(v: Value | undefined, where: string, low: number, high: number): string {
  if (typeof v !== "string" || pyLen(v) < low || pyLen(v) > high) {
    fail(`${where} must be a string of ${low} to ${high} characters, got ${show(v)}`);
  }
  return v;
}

function checkNormalizer(v: Value | undefined): void {
  typed(v, "normalizer", TOKENIZER_NORMALIZER);
  const keys = ["type", "clean_text", "handle_chinese_chars", "strip_accents", "lowercase"];
  const n = map(v, "normalizer", keys, keys);
  for (const k of ["clean_text", "handle_chinese_chars", "lowercase"]) bool(n.get(k), `normalizer.${k}`);
  bool(n.get("strip_accents"), "normalizer.strip_accents", true);
}

function checkVocab(model: ValueMap): ValueMap {
  const vocab = model.get("vocab");
  if (!isMap(vocab) || vocab.size < 1 || vocab.size > MAX_VOCAB_SIZE) {
    fail(`model.vocab must be an object of 1 to ${MAX_VOCAB_SIZE} tokens`);
  }
  const ids = new Set<bigint>();
  for (const [token, i] of vocab) {
    const n = pyLen(token);
    if (n < 1 || n > MAX_TOKEN_CHARS) fail(`model.vocab token ${show(token)} must have 1 to ${MAX_TOKEN_CHARS} characters`);
    if (!isInt(i) || i < 0n || i >= BigInt(vocab.size)) {
      fail(`model.vocab id of ${show(token)} must be an integer in 0..${vocab.size - 1}, got ${show(i)}`);
    }
    ids.add(i);
  }
  if (ids.size !== vocab.size) fail("model.vocab must give every token its own id (ids 0 to size - 1, each once)");
  return vocab;
}

function checkModel(v: Value | undefined): ValueMap {
  typed(v, "model", TOKENIZER_MODEL);
  const keys = ["type", "unk_token", "continuing_subword_prefix", "max_input_chars_per_word", "vocab"];
  const m = map(v, "model", keys, keys);
  const vocab = checkVocab(m);
  const unk = str(m.get("unk_token"), "model.unk_token", 1, MAX_TOKEN_CHARS);
  if (!vocab.has(unk)) fail(`model.unk_token ${show(unk)} is not in model.vocab`);
  str(m.get("continuing_subword_prefix"), "model.continuing_subword_prefix", 1, MAX_PREFIX_CHARS_WORDPIECE);
  int(m.get("max_input_chars_per_word"), "model.max_input_chars_per_word", 1, MAX_INPUT_CHARS_PER_WORD);
  return vocab;
}

function checkAddedTokens(v: Value | undefined, vocab: ValueMap): void {
  if (!Array.isArray(v) || v.length > MAX_ADDED_TOKENS) fail(`added_tokens must be a list of at most ${MAX_ADDED_TOKENS} tokens`);
  const keys = ["id", "content", "single_word", "lstrip", "rstrip", "normalized", "special"];
  v.forEach((item, i) => {
    const where = `added_tokens[${i}]`;
    const t = map(item, where, keys, keys);
    const content = str(t.get("content"), `${where}.content`, 1, MAX_TOKEN_CHARS);
    if (!pyEq(vocab.get(content) ?? null, t.get("id")) || typeof t.get("id") === "boolean") {
      fail(`${where} must be a token of model.vocab with its id, got ${show(content)} with id ${show(t.get("id"))}`);
    }
    for (const k of keys.slice(2)) bool(t.get(k), `${where}.${k}`);
  });
}

function checkTemplate(items: Value | undefined, where: string, specials: ValueMap, single: boolean): void {
  if (!Array.isArray(items) || items.length < 1 || items.length > 8) fail(`${where} must be a list of 1 to 8 pieces`);
  const kinds: string[] = [];
  items.forEach((piece, i) => {
    const at = `${where}[${i}]`;
    if (!isMap(piece) || piece.size !== 1) {
      fail(`${at} must be {"SpecialToken": ...} or {"Sequence": ...}, got ${show(piece)}`);
    }
    const [kind, body] = [...piece][0]!;
    let b: ValueMap;
    if (kind === "SpecialToken") {
      b = map(body, `${at}.SpecialToken`, ["id", "type_id"], ["id", "type_id"]);
      const id = b.get("id");
      if (typeof id !== "string" || !specials.has(id)) {
        fail(`${at}.SpecialToken.id ${show(id)} is not in post_processor.special_tokens`);
      }
    } else if (kind === "Sequence") {
      b = map(body, `${at}.Sequence`, ["id", "type_id"], ["id", "type_id"]);
      if (!pyEq(b.get("id"), "A") && !pyEq(b.get("id"), "B")) fail(`${at}.Sequence.id must be "A" or "B", got ${show(b.get("id"))}`);
    } else {
      return fail(`${at} must be {"SpecialToken": ...} or {"Sequence": ...}, got ${show(kind)}`);
    }
    int(b.get("type_id"), `${at}.${kind}.type_id`, 0, 1);
    kinds.push(kind === "SpecialToken" ? kind : String(b.get("id")));
  });
  const zeroTypes = items.every((p) => [...(p as ValueMap).values()].every((b) => pyEq((b as ValueMap).get("type_id"), 0n)));
  if (single && (kinds.join(",") !== "SpecialToken,A,SpecialToken" || !zeroTypes)) {
    fail(`${where} must be [SpecialToken, Sequence A, SpecialToken] with type_id 0 (BERT's [CLS] A [SEP])`);
  }
}

function checkPostProcessor(v: Value | undefined, vocab: ValueMap): void {
  typed(v, "post_processor", TOKENIZER_POST_PROCESSOR);
  const pp = map(v, "post_processor", ["type", "single", "pair", "special_tokens"], ["type", "single", "special_tokens"]);
  const specials = pp.get("special_tokens");
  if (!isMap(specials) || specials.size < 1 || specials.size > 8) {
    fail("post_processor.special_tokens must be an object of 1 to 8 tokens");
  }
  for (const [name, item] of specials) {
    const at = `post_processor.special_tokens.${name}`;
    const st = map(item, at, ["id", "ids", "tokens"], ["id", "ids", "tokens"]);
    // Each special token is one vocabulary token with its id (BERT's [CLS] and [SEP]).
    if (!pyEq(st.get("id"), name) || !pyEq(st.get("tokens"), [name]) || !pyEq(st.get("ids"), [vocab.get(name) ?? null]) ||
        !vocab.has(name)) {
      fail(`${at} must be {"id": ${show(name)}, "ids": [its vocabulary id], "tokens": [${show(name)}]} with ` +
           `${show(name)} in model.vocab`);
    }
  }
  checkTemplate(pp.get("single"), "post_processor.single", specials, true);
  if (pp.has("pair")) checkTemplate(pp.get("pair"), "post_processor.pair", specials, false);
}

function checkSettings(doc: ValueMap): void {
  const t0 = doc.get("truncation");
  if (t0 !== undefined && t0 !== null) {
    const t = map(t0, "truncation", ["direction", "max_length", "strategy", "stride"], ["max_length"]);
    int(t.get("max_length"), "truncation.max_length", 0, LENGTH_HIGH);
    if (t.has("stride")) int(t.get("stride"), "truncation.stride", 0, LENGTH_HIGH);
    for (const k of ["direction", "strategy"]) if (t.has(k)) str(t.get(k), `truncation.${k}`, 1, 32);
  }
  const p0 = doc.get("padding");
  if (p0 !== undefined && p0 !== null) {
    const p = map(p0, "padding", ["strategy", "direction", "pad_to_multiple_of", "pad_id", "pad_type_id", "pad_token"]);
    const strategy = p.get("strategy");
    const fixed = isMap(strategy) && strategy.size === 1 && strategy.has("Fixed");
    if (fixed) int(strategy.get("Fixed"), "padding.strategy.Fixed", 0, LENGTH_HIGH);
    else if (strategy !== "BatchLongest") fail(`padding.strategy must be "BatchLongest" or {"Fixed": n}, got ${show(strategy)}`);
    const multiple = p.get("pad_to_multiple_of");
    if (multiple !== undefined && multiple !== null) int(multiple, "padding.pad_to_multiple_of", 1, LENGTH_HIGH);
    for (const k of ["pad_id", "pad_type_id"]) if (p.has(k)) int(p.get(k), `padding.${k}`, 0, MAX_VOCAB_SIZE);
    for (const k of ["direction", "pad_token"]) if (p.has(k)) str(p.get(k), `padding.${k}`, 1, MAX_TOKEN_CHARS);
  }
}

function check(doc0: Value): void {
  const doc = map(doc0, "", TOKENIZER_KEYS, TOKENIZER_REQUIRED);
  if (doc.has("version") && !pyEq(doc.get("version"), "1.0")) fail(`version is ${show(doc.get("version"))}, expected "1.0"`);
  checkNormalizer(doc.get("normalizer"));
  const pre = doc.get("pre_tokenizer");
  typed(pre, "pre_tokenizer", TOKENIZER_PRE_TOKENIZER);
  map(pre, "pre_tokenizer", ["type"]);
  const vocab = checkModel(doc.get("model"));
  checkAddedTokens(doc.get("added_tokens"), vocab);
  checkPostProcessor(doc.get("post_processor"), vocab);
  const decoder = doc.get("decoder");
  if (decoder !== undefined && decoder !== null) {
    typed(decoder, "decoder", TOKENIZER_DECODER);
    const d = map(decoder, "decoder", ["type", "prefix", "cleanup"], ["type", "prefix", "cleanup"]);
    str(d.get("prefix"), "decoder.prefix", 1, MAX_PREFIX_CHARS_WORDPIECE);
    bool(d.get("cleanup"), "decoder.cleanup");
  }
  checkSettings(doc);
}

/** Refuse a tokenizer.json outside the BERT WordPiece family; returns the parsed document. */
export function checkTokenizerJson(text: string): ValueMap {
  const n = pyLen(text);
  if (n > MAX_TOKENIZER_JSON_CHARS) {
    throw new BundleError(`field '${FIELD}' has ${n} characters, more than ${MAX_TOKENIZER_JSON_CHARS}`);
  }
  try {
    const doc = parseJson(text, (key) => `key ${show(key)} appears twice in one object`);
    check(doc);
    return doc as ValueMap;
  } catch (e) {
    if (e instanceof Refused || (e instanceof JsonRefused && !e.message.startsWith("it nests"))) {
      throw new BundleError(`field '${FIELD}' is outside the tokenizer family: ${e.message}`);
    }
    if (e instanceof JsonRefused) throw new BundleError(`field '${FIELD}' is not JSON a reader can parse: ${e.message}`);
    if (e instanceof JsonSyntaxError) throw new BundleError(`field '${FIELD}' is not valid JSON: ${e.message}`);
    throw e;
  }
}
