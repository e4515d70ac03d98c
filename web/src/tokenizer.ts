/**
 * WordPiece tokenization from the bundle's tokenizer.json with @huggingface/tokenizers, made to
 * give the Python runtime's token ids (the Rust `tokenizers` library): the encoder computes the
 * exporter's embedding only when it is fed exactly the exporter's ids.
 *
 * The library runs the added-token split, WordPiece and the [CLS] A [SEP] template. Two of its
 * components are replaced by hand, because they give other ids than the Rust library
 * (measured by tokenizing every Unicode code point with both, web/test/tokenizer.test.ts):
 *
 * - BertNormalizer: it walks UTF-16 units when it puts spaces around CJK ideographs, so the
 *   ideographs outside the Basic Multilingual Plane (U+20000 and up) stay glued to their
 *   neighbours; it lowercases the whole string at once, so a final capital sigma becomes
 *   "ς" where Rust, lowercasing code point by code point, gives "σ"; it lowercases before
 *   stripping accents, Rust after; and it decides "control" and "non-spacing mark" with the
 *   JavaScript engine's Unicode tables, which are newer than the Rust crate's (about 200
 *   marks added or re-categorised since are stripped by one and kept by the other).
 * - BertPreTokenizer: its punctuation and whitespace classes come from the engine's \p{P}
 *   and \s, again newer than Rust's (U+2E43..U+2E4F and about 170 others).
 *
 * The replacements use the Rust library's own classes, read off it code point by code point
 * by web/scripts/gen_schema.py (src/generated/unicode.ts), so they do not depend on the
 * JavaScript engine's Unicode version. NFD is the engine's (String.normalize), except that a
 * code point the Rust library does not decompose (one whose decomposition is newer than its
 * tables, e.g. U+105C9) is left as it is.
 *
 * Truncation and padding follow the format, not the JSON: no padding, and the text's tokens cut
 * from the right so that with the template's special tokens there are at most max_length.
 */
import { Normalizer, PreTokenizer, Tokenizer } from "@huggingface/tokenizers";
import { BundleError } from "./errors.js";
import {
  CHINESE, CONTROL, DECOMPOSABLE, LOWERCASE, NONSPACING_MARK, PUNCTUATION, WHITESPACE,
} from "./generated/unicode.js";
import { jsonDumps, type Value, type ValueMap } from "./pyrepr.js";
import { inRanges } from "./text.js";

const LOWER = new Map(LOWERCASE);

/** Rust's BertNormalizer over its own character classes (see the module doc). */
export class RustBertNormalizer extends Normalizer {
  private readonly clean: boolean;
  private readonly chinese: boolean;
  private readonly strip: boolean;
  private readonly lower: boolean;

  constructor(config: { clean_text: boolean; handle_chinese_chars: boolean; strip_accents: boolean | null; lowercase: boolean }) {
    super({ type: "BertNormalizer", clean_text: config.clean_text, handle_chinese_chars: config.handle_chinese_chars,
      lowercase: config.lowercase, strip_accents: config.strip_accents ?? undefined });
    this.clean = config.clean_text;
    this.chinese = config.handle_chinese_chars;
    this.lower = config.lowercase;
    this.strip = config.strip_accents ?? config.lowercase; // null follows lowercase, as in Rust
  }

  override normalize(text: string): string {
    let out = text;
    if (this.clean) {
      let s = "";
      for (const ch of out) {
        const cp = ch.codePointAt(0)!;
        if (inRanges(CONTROL, cp)) continue;
        s += inRanges(WHITESPACE, cp) ? " " : ch;
      }
      out = s;
    }
    if (this.chinese) {
      let s = "";
      for (const ch of out) s += inRanges(CHINESE, ch.codePointAt(0)!) ? ` ${ch} ` : ch;
      out = s;
    }
    if (this.strip) {
      let s = "";
      for (const ch of nfd(out)) if (!inRanges(NONSPACING_MARK, ch.codePointAt(0)!)) s += ch;
      out = s;
    }
    if (this.lower) {
      let s = "";
      for (const ch of out) s += LOWER.get(ch.codePointAt(0)!) ?? ch;
      out = s;
    }
    return out;
  }
}

/** NFD as the Rust library computes it: the engine's, but never of a code point Rust leaves alone. */
export function nfd(text: string): string {
  const whole = text.normalize("NFD");
  if (whole === text) return text;
  let out = "";
  let run = "";
  for (const ch of text) {
    const cp = ch.codePointAt(0)!;
    if (cp >= 0x80 && !inRanges(DECOMPOSABLE, cp) && ch.normalize("NFD") !== ch) {
      // A starter the engine decomposes and Rust does not: kept, and the runs around it normalised alone.
      out += run.normalize("NFD") + ch;
      run = "";
    } else {
      run += ch;
    }
  }
  return out + run.normalize("NFD");
}

/** Rust's BertPreTokenizer: split on whitespace (removed), each punctuation code point its own word. */
export class RustBertPreTokenizer extends PreTokenizer {
  override pre_tokenize_text(text: string): string[] {
    const words: string[] = [];
    let word = "";
    for (const ch of text) {
      const cp = ch.codePointAt(0)!;
      if (inRanges(WHITESPACE, cp)) {
        if (word) words.push(word);
        word = "";
      } else if (inRanges(PUNCTUATION, cp)) {
        if (word) words.push(word);
        words.push(ch);
        word = "";
      } else {
        word += ch;
      }
    }
    if (word) words.push(word);
    return words;
  }
}

function cannotLoad(why: string): never {
  throw new BundleError(`the bundle's tokenizer cannot be loaded: ${why}`);
}

/**
 * What the Rust library refuses when it loads a tokenizer.json that the tokenizer family lets
 * through (the Python runtime then refuses the bundle at load), and what this runtime cannot
 * reproduce (added-token flags the JavaScript library handles differently, like the Java core).
 */
function checkLoadable(doc: ValueMap): void {
  const map = (v: Value | undefined): ValueMap | null => (v instanceof Map ? v : null);
  const u32 = (v: Value | undefined, where: string): void => {
    if (typeof v !== "bigint") cannotLoad(`${where}: invalid type ${jsonDumps(v ?? null)}, expected u32`);
  };
  const oneOf = (v: Value | undefined, where: string, variants: string[]): void => {
    if (typeof v !== "string" || !variants.includes(v)) cannotLoad(`${where}: unknown variant ${jsonDumps(v ?? null)}, expected one of ${variants.join(", ")}`);
  };
  const truncation = map(doc.get("truncation"));
  if (truncation) {
    for (const k of ["max_length", "strategy", "stride"]) if (!truncation.has(k)) cannotLoad(`truncation: missing field \`${k}\``);
    oneOf(truncation.get("strategy"), "truncation.strategy", ["LongestFirst", "OnlyFirst", "OnlySecond"]);
    if (truncation.has("direction")) oneOf(truncation.get("direction"), "truncation.direction", ["Left", "Right"]);
  }
  const padding = map(doc.get("padding"));
  if (padding) {
    for (const k of ["strategy", "direction", "pad_id", "pad_type_id", "pad_token"]) {
      if (!padding.has(k)) cannotLoad(`padding: missing field \`${k}\``);
    }
    oneOf(padding.get("direction"), "padding.direction", ["Left", "Right"]);
  }
  const post = map(doc.get("post_processor"))!;
  if (!post.has("pair")) cannotLoad("post_processor: TemplateProcessing without its pair template");
  for (const [name, st] of map(post.get("special_tokens"))!) {
    for (const id of map(st)!.get("ids") as Value[]) u32(id, `post_processor.special_tokens.${name}.ids`);
  }
  (doc.get("added_tokens") as Value[]).forEach((t0, i) => {
    const t = map(t0)!;
    u32(t.get("id"), `added_tokens[${i}].id`);
    for (const flag of ["single_word", "lstrip", "rstrip"]) {
      if (t.get(flag) === true) {
        cannotLoad(`added token ${jsonDumps(t.get("content")!)} sets ${flag}, which this runtime does not support`);
      }
    }
  });
}

/** Turns texts into token-id lists: the bundle's text prefix, no padding, truncated to max_length. */
export class TextTokenizer {
  private readonly tok: Tokenizer;
  private readonly prefixIds: number[];
  private readonly suffixIds: number[];

  /** `doc` is the tokenizer.json as the family check parsed it (integers as bigint). */
  constructor(tokenizerJson: string, doc: ValueMap, readonly maxLength: number, readonly textPrefix = "") {
    checkLoadable(doc);
    const json = JSON.parse(tokenizerJson) as Record<string, unknown>;
    json["decoder"] ??= null; // the library wants the key; the family makes it optional
    const normalizer = json["normalizer"] as ConstructorParameters<typeof RustBertNormalizer>[0];
    try {
      this.tok = new Tokenizer(json, {});
    } catch (e) {
      cannotLoad(String((e as Error).message).split("\n").join(" ").slice(0, 300));
    }
    const mine = new RustBertNormalizer(normalizer);
    // Added tokens marked `normalized` were matched by the library against its own
    // normalizer's output at construction: refuse a bundle where the two normalizers disagree
    // on such a token (no BERT tokenizer has one: its special tokens are not normalized).
    for (const t of json["added_tokens"] as { content: string; normalized: boolean }[]) {
      if (t.normalized && this.tok.normalizer !== null && this.tok.normalizer(t.content) !== mine.normalize(t.content)) {
        cannotLoad(`added token ${jsonDumps(t.content)} is normalized differently by @huggingface/tokenizers`);
      }
    }
    this.tok.normalizer = mine;
    this.tok.pre_tokenizer = new RustBertPreTokenizer();
    // The family's template is exactly [CLS] A [SEP]: its two special tokens' ids.
    const post = doc.get("post_processor") as ValueMap;
    const single = post.get("single") as ValueMap[];
    const specials = post.get("special_tokens") as ValueMap;
    const ids = (piece: ValueMap): number[] => {
      const name = (piece.get("SpecialToken") as ValueMap).get("id") as string;
      return ((specials.get(name) as ValueMap).get("ids") as bigint[]).map(Number);
    };
    this.prefixIds = ids(single[0]!);
    this.suffixIds = ids(single[2]!);
    if (maxLength < this.prefixIds.length + this.suffixIds.length) {
      cannotLoad(`max_length ${maxLength} leaves no room for the special tokens`);
    }
  }

  /** Token ids of one text, with the special tokens, truncated, not padded. */
  encode(text: string): number[] {
    const ids = this.tok.encode(this.textPrefix + text, { add_special_tokens: false }).ids;
    const room = this.maxLength - this.prefixIds.length - this.suffixIds.length;
    return [...this.prefixIds, ...ids.slice(0, room), ...this.suffixIds];
  }
}
