/**
 * WordPiece tokenization (BERT's and MPNet's) as the contract defines it, on code points with the
 * contract's Unicode tables (unicode.ts), from the checked tokenizer.json (tokenizer_family.ts):
 *
 * 1. the text prefix, then the text, split around the added tokens that are not normalized
 *    (leftmost, longest first; each is its id);
 * 2. each piece between them normalised as BertNormalizer says: clean_text removes U+0000,
 *    U+FFFD and the controls but tab, line feed and carriage return and makes white space a
 *    space; handle_chinese_chars puts spaces around CJK ideographs; strip_accents (null: as
 *    lowercase) is NFD then no non-spacing mark; lowercase is each code point's full mapping;
 *    then split around the normalized added tokens (1.2: MPNet's <unk>) as in step 1 (lstrip
 *    and rstrip change no id: the white space they would take is dropped in step 3 anyway);
 * 3. split on white space (removed) and around each punctuation code point (ASCII or P*);
 * 4. WordPiece: a word longer than max_input_chars_per_word is the unknown token; else the
 *    longest vocabulary prefix, then the longest continuation, and so on; a remainder no token
 *    matches makes the whole word the unknown token;
 * 5. the first max_length - 2 ids between the post-processor's two special tokens: the single
 *    template's ([CLS] and [SEP]) or RobertaProcessing's cls and sep (1.2: <s> and </s>). No
 *    padding; the JSON's own truncation and padding are ignored.
 */
import { SCHEMA } from "./contract.js";
import type { Json } from "./tokenizer_family.js";
import { CharSet, charset, codePoints, fromCodePoints, lower, nfd } from "./unicode.js";

type Obj = Map<string, Json>;
const { ascii_punctuation, clean_text_removes: REMOVES, clean_text_keeps: KEEPS } = SCHEMA.tokenize;
const ASCII_PUNCTUATION = new Set(codePoints(ascii_punctuation));
const CHINESE = new CharSet(SCHEMA.chinese);
const CACHE_WORDS = 1 << 16;

/** Added tokens by their first code point, longest first: [code points, id]. */
type AddedTokens = Map<number, [number[], number][]>;

function addedTokens(tokens: Map<string, number>): AddedTokens {
  const out: AddedTokens = new Map();
  for (const [content, id] of tokens) {
    const cps = codePoints(content);
    const list = out.get(cps[0]!) ?? [];
    list.push([cps, id]);
    out.set(cps[0]!, list.sort((a, b) => b[0].length - a[0].length));
  }
  return out;
}

/**
 * `cps` split around the added tokens (at each position the longest that matches, leftmost
 * first), lazily (a caller stops at its limit): [the piece, the id of the added token after it,
 * or undefined after the last piece].
 */
function* split(cps: number[], added: AddedTokens): Generator<[number[], number | undefined]> {
  let start = 0;
  for (let i = 0; i < cps.length; i++) {
    const match = added.get(cps[i]!)?.find(([t]) => t.every((cp, j) => cps[i + j] === cp));
    if (match === undefined) continue;
    yield [cps.slice(start, i), match[1]];
    start = i + match[0].length;
    i = start - 1;
  }
  yield [cps.slice(start), undefined];
}

export class TextTokenizer {
  private readonly clean: boolean;
  private readonly chinese: boolean;
  private readonly strip: boolean;
  private readonly lowercase: boolean;
  private readonly vocab: Map<string, number>;
  private readonly unk: number;
  private readonly continuing: string;
  private readonly maxWord: number;
  /** Added tokens matched in the text as given (step 1), and in the normalized text (step 2). */
  private readonly added: AddedTokens;
  private readonly addedNormalized: AddedTokens;
  private readonly first: number;
  private readonly last: number;
  private readonly cache = new Map<string, number[]>();

  /** `doc` is the tokenizer.json as checkTokenizerJson returned it. */
  constructor(doc: Obj, readonly maxLength: number, readonly textPrefix = "") {
    const get = (m: Json | undefined, key: string): Json | undefined => (m as Obj).get(key);
    const n = doc.get("normalizer");
    this.clean = get(n, "clean_text") === true;
    this.chinese = get(n, "handle_chinese_chars") === true;
    this.lowercase = get(n, "lowercase") === true;
    this.strip = (get(n, "strip_accents") ?? this.lowercase) === true;
    const model = doc.get("model");
    this.vocab = get(model, "vocab") as Map<string, number>;
    this.unk = this.vocab.get(get(model, "unk_token") as string)!;
    this.continuing = get(model, "continuing_subword_prefix") as string;
    this.maxWord = get(model, "max_input_chars_per_word") as number;
    const [added, addedNormalized] = [new Map<string, number>(), new Map<string, number>()];
    for (const t of doc.get("added_tokens") as Obj[]) {
      (t.get("normalized") === true ? addedNormalized : added).set(t.get("content") as string, t.get("id") as number);
    }
    this.added = addedTokens(added);
    this.addedNormalized = addedTokens(addedNormalized);
    const post = doc.get("post_processor") as Obj;
    if (post.get("type") === "RobertaProcessing") {
      this.first = (post.get("cls") as [string, number])[1];
      this.last = (post.get("sep") as [string, number])[1];
    } else {
      const special = (piece: Json | undefined): number =>
        (get(get(post.get("special_tokens"), get(get(piece, "SpecialToken"), "id") as string), "ids") as number[])[0]!;
      const single = post.get("single") as Json[];
      this.first = special(single[0]);
      this.last = special(single[2]);
    }
  }

  /** BertNormalizer's steps, as configured. */
  normalize(piece: number[]): number[] {
    if (this.clean) {
      const control = charset("control");
      const space = charset("whitespace");
      piece = piece.filter((cp) => !(REMOVES.includes(cp) || (control.has(cp) && !KEEPS.includes(cp))))
        .map((cp) => (space.has(cp) ? 32 : cp));
    }
    if (this.chinese) piece = piece.flatMap((cp) => (CHINESE.has(cp) ? [32, cp, 32] : [cp]));
    if (this.strip) {
      const mark = charset("nonspacing_mark");
      piece = nfd(piece).filter((cp) => !mark.has(cp));
    }
    return this.lowercase ? lower(piece) : piece;
  }

  /** The WordPiece ids of one word. */
  private word(word: number[]): number[] {
    const text = fromCodePoints(word);
    let ids = this.cache.get(text);
    if (ids !== undefined) return ids;
    ids = [];
    if (word.length > this.maxWord) {
      ids = [this.unk];
    } else {
      const at = [0]; // code unit offset of each code point
      for (const cp of word) at.push(at[at.length - 1]! + (cp > 0xffff ? 2 : 1));
      for (let start = 0; start < word.length;) {
        let end = word.length;
        for (; end > start; end--) {
          const id = this.vocab.get((start ? this.continuing : "") + text.slice(at[start], at[end]));
          if (id !== undefined) {
            ids.push(id);
            break;
          }
        }
        if (end === start) {
          ids = [this.unk];
          break;
        }
        start = end;
      }
    }
    if (this.cache.size < CACHE_WORDS) this.cache.set(text, ids);
    return ids;
  }

  /** The ids of `text` without special tokens, at most `limit` of them. */
  private pieces(text: string, limit: number): number[] {
    const ids: number[] = [];
    for (const [piece, added] of split(codePoints(text), this.added)) {
      if (piece.length && !this.normalized(this.normalize(piece), ids, limit)) break;
      if (added === undefined) break;
      ids.push(added);
      if (ids.length >= limit) break;
    }
    return ids.slice(0, limit);
  }

  /**
   * Append the ids of a normalized piece: split around the normalized added tokens, each piece
   * between them into words. False once `limit` ids are there.
   */
  private normalized(piece: number[], ids: number[], limit: number): boolean {
    for (const [sub, added] of split(piece, this.addedNormalized)) {
      if (!this.words(sub, ids, limit)) return false;
      if (added === undefined) break;
      ids.push(added);
      if (ids.length >= limit) return false;
    }
    return true;
  }

  /** Append the WordPiece ids of a piece's words (split on white space and around punctuation); false once `limit` ids are there. */
  private words(piece: number[], ids: number[], limit: number): boolean {
    const punctuation = charset("punctuation");
    const space = charset("whitespace");
    let word: number[] = [];
    const flush = (): boolean => {
      if (word.length) ids.push(...this.word(word));
      word = [];
      return ids.length < limit;
    };
    for (const cp of piece) {
      if (space.has(cp)) {
        if (!flush()) return false;
      } else if (ASCII_PUNCTUATION.has(cp) || punctuation.has(cp)) {
        if (!flush()) return false;
        word = [cp];
        if (!flush()) return false;
      } else {
        word.push(cp);
      }
    }
    return flush();
  }

  /** Whether `text` alone (no prefix) gives a token: a query of only white space, controls or invisible code points gives none. */
  hasToken(text: string): boolean {
    return this.pieces(text, 1).length > 0;
  }

  /** Token ids of one text: the prefix and the text, [CLS] ... [SEP] (or <s> ... </s>), truncated, no padding. */
  encode(text: string): number[] {
    return [this.first, ...this.pieces(this.textPrefix + text, this.maxLength - 2), this.last];
  }
}
