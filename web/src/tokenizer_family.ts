/**
 * The tokenizer family: a bundle's tokenizer.json is strict JSON of one closed shape
 * (schema.json "tokenizer"), interpreted here so that no JSON library or tokenizer library
 * decides what a bundle means.
 *
 * - Strict JSON: no key twice in an object, no NaN or infinity, no integer written -0 or beyond
 *   2^53 - 1, no \u escape that leaves a lone surrogate, at most 16 levels of nesting, JSON
 *   white space only, no byte order mark; otherwise tokenizer.json.
 * - The document schema: in each object the missing keys in schema order, then unknown keys in
 *   document order, then the values in schema order; one_of takes the first alternative that
 *   accepts, else refuses at the value's own path; a tagged node (1.2: the post-processor) is an
 *   object whose tag key names its form (the tag missing or naming none is refused at the tag),
 *   then checked as that form; a tuple (1.2) is an array of exactly one value per node, each
 *   checked against its own; then the family's relations in order.
 *   Otherwise tokenizer.family, at "encoder.tokenizer_json" + the value's JSON pointer.
 */
import { SCHEMA, type Shape } from "./contract.js";
import { BundleError } from "./errors.js";
import { cpLength, loneSurrogate } from "./unicode.js";

const FIELD = "encoder.tokenizer_json";

/** A JSON number written with a fraction or an exponent (the family has none: always refused). */
export class JFloat {
  constructor(readonly value: number) {}
}

/** A parsed JSON value: integers are numbers, objects keep their key order. */
export type Json = null | boolean | number | JFloat | string | Json[] | Map<string, Json>;

class NotStrict extends Error {}

const NUMBER = /-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?/y;
const ESCAPES: Record<string, string> = { '"': '"', "\\": "\\", "/": "/", b: "\b", f: "\f", n: "\n", r: "\r", t: "\t" };

/** `text` as strict JSON (see the module doc). */
export function parseStrict(text: string): Json {
  const { max_depth: maxDepth, max_integer: maxInteger } = SCHEMA.tokenizer;
  let pos = 0;
  function no(why: string): never {
    throw new NotStrict(`${why} at character ${pos}`);
  }
  const space = (): void => {
    while (" \t\n\r".includes(text[pos] ?? "x")) pos++;
  };
  const string = (): string => {
    pos++; // the opening quote
    let out = "";
    for (;;) {
      let end = pos;
      while (end < text.length && text[end] !== '"' && text[end] !== "\\" && text[end]! >= " ") end++;
      out += text.slice(pos, end);
      pos = end;
      const c = text[pos++];
      if (c === undefined) no("an unterminated string");
      else if (c === '"') break;
      else if (c < " ") no("a control character in a string");
      else if (text[pos] === "u" && /^[0-9a-fA-F]{4}$/.test(text.slice(pos + 1, pos + 5))) {
        out += String.fromCharCode(parseInt(text.slice(pos + 1, pos + 5), 16));
        pos += 5;
      } else if (ESCAPES[text[pos] ?? ""] !== undefined) out += ESCAPES[text[pos++]!];
      else no("an invalid escape");
    }
    if (loneSurrogate(out) >= 0) no("a string with a lone surrogate");
    return out;
  };
  const value = (depth: number): Json => {
    space();
    const c = text[pos];
    if (c === "{" || c === "[") {
      if (depth > maxDepth) no(`nesting deeper than ${maxDepth}`);
      pos++;
      space();
      const close = c === "{" ? "}" : "]";
      const out: Json[] | Map<string, Json> = c === "{" ? new Map() : [];
      if (text[pos] === close) {
        pos++;
        return out;
      }
      for (;;) {
        if (out instanceof Map) {
          space();
          if (text[pos] !== '"') no("an object key that is not a string");
          const key = string();
          if (out.has(key)) no(`the key "${key.slice(0, 60)}" twice in one object`);
          space();
          if (text[pos++] !== ":") no("a missing colon");
          out.set(key, value(depth + 1));
        } else {
          out.push(value(depth + 1));
        }
        space();
        const sep = text[pos++];
        if (sep === close) return out;
        if (sep !== ",") no("a missing comma");
      }
    }
    if (c === '"') return string();
    for (const [word, v] of [["null", null], ["true", true], ["false", false]] as const) {
      if (text.startsWith(word, pos)) {
        pos += word.length;
        return v;
      }
    }
    NUMBER.lastIndex = pos;
    const m = NUMBER.exec(text);
    if (m === null) return no("something that is not a JSON value");
    pos += m[0].length;
    if (m[1] !== undefined || m[2] !== undefined) return new JFloat(Number(m[0]));
    if (m[0] === "-0") no("the integer -0");
    const n = Number(m[0]);
    if (Math.abs(n) > maxInteger) no("an integer beyond 2^53 - 1");
    return n;
  };
  try {
    const doc = value(1);
    space();
    if (pos !== text.length) no("text after the document");
    return doc;
  } catch (e) {
    if (e instanceof NotStrict) throw new BundleError("tokenizer.json", FIELD, `${FIELD} is not strict JSON: ${e.message}`);
    throw e;
  }
}

class Refused extends Error {
  constructor(readonly at: string, why: string) {
    super(why);
  }
}

/** A JSON pointer one level down (RFC 6901: ~ and / escaped). */
const pointer = (at: string, key: string | number): string => `${at}/${String(key).replaceAll("~", "~0").replaceAll("/", "~1")}`;

function show(v: Json): string {
  const s = v instanceof JFloat ? String(v.value) : v instanceof Map ? "an object" : Array.isArray(v) ? "an array" : JSON.stringify(v);
  return s.length <= 60 ? s : s.slice(0, 57) + "...";
}

function count(n: number, s: Shape, at: string): void {
  if (n < (s.min_items ?? 0) || n > (s.max_items ?? n)) throw new Refused(at, `has ${n} entries, outside ${s.min_items ?? 0} to ${s.max_items}`);
}

/** Check `v` against one schema node (the order of the checks is normative). */
function walk(v: Json, s: Shape, at: string): void {
  if (s.ref !== undefined) s = { ...SCHEMA.tokenizer.definitions[s.ref], ...s, ref: undefined };
  if (v === null) {
    if (s.nullable) return;
    throw new Refused(at, "is null");
  }
  if (s.one_of !== undefined) {
    for (const alternative of s.one_of) {
      try {
        walk(v, alternative, at);
        return;
      } catch (e) {
        if (!(e instanceof Refused)) throw e;
      }
    }
    throw new Refused(at, `is ${show(v)}, none of the forms the family allows`);
  }
  if (s.tagged !== undefined) { // an object whose key `tagged` names its form (a post-processor's "type")
    if (!(v instanceof Map)) throw new Refused(at, `is ${show(v)}, expected an object`);
    const [tag, forms] = [s.tagged, s.forms!];
    if (!v.has(tag)) throw new Refused(pointer(at, tag), "is missing");
    const form = v.get(tag)!;
    if (!(typeof form === "string" && Object.hasOwn(forms, form))) {
      throw new Refused(pointer(at, tag), `is ${show(form)}, expected one of ${Object.keys(forms).join(", ")}`);
    }
    walk(v, forms[form]!, at);
    return;
  }
  if ("const" in s) {
    if (typeof v !== typeof s.const || v !== s.const) throw new Refused(at, `is ${show(v)}, expected ${JSON.stringify(s.const)}`);
    return;
  }
  if (s.enum !== undefined) {
    if (!(typeof v === "string" && s.enum.includes(v))) throw new Refused(at, `is ${show(v)}, expected one of ${s.enum.join(", ")}`);
    return;
  }
  const ok = s.type === "object" || s.type === "map" ? v instanceof Map
    : s.type === "array" || s.type === "tuple" ? Array.isArray(v)
    : s.type === "string" ? typeof v === "string" : s.type === "boolean" ? typeof v === "boolean"
    : typeof v === "number" && v >= s.min! && v <= s.max!;
  if (!ok) {
    const want = s.type === "integer" ? `an integer from ${s.min} to ${s.max}` : s.type === "object" || s.type === "map"
      ? "an object" : s.type === "array" || s.type === "tuple" ? "an array" : `a ${s.type}`;
    throw new Refused(at, `is ${show(v)}, expected ${want}`);
  }
  if (v instanceof Map && s.type === "object") {
    const keys = new Map(s.keys!);
    for (const [k, sub] of s.keys!) if (!v.has(k) && !sub.optional) throw new Refused(pointer(at, k), "is missing");
    for (const k of v.keys()) if (!keys.has(k)) throw new Refused(pointer(at, k), "is not part of the family");
    for (const [k, sub] of s.keys!) if (v.has(k)) walk(v.get(k)!, sub, pointer(at, k));
  } else if (v instanceof Map) {
    count(v.size, s, at);
    const [low, high] = s.key_length!;
    for (const [k, x] of v) {
      const n = cpLength(k);
      if (n < low || n > high) throw new Refused(pointer(at, k), `is a key of ${n} characters, outside ${low} to ${high}`);
      walk(x, s.values!, pointer(at, k));
    }
  } else if (Array.isArray(v) && s.type === "tuple") { // exactly one value per node, in order
    const items = s.items as readonly Shape[];
    if (v.length !== items.length) throw new Refused(at, `has ${v.length} entries, expected ${items.length}`);
    v.forEach((x, i) => walk(x, items[i]!, pointer(at, i)));
  } else if (Array.isArray(v)) {
    count(v.length, s, at);
    v.forEach((x, i) => walk(x, s.items as Shape, pointer(at, i)));
  } else if (typeof v === "string") {
    const n = cpLength(v);
    if (n < (s.min_length ?? 0) || n > (s.max_length ?? n)) {
      throw new Refused(at, `has ${n} characters, outside ${s.min_length ?? 0} to ${s.max_length}`);
    }
  }
}

type Obj = Map<string, Json>;
const obj = (v: Json | undefined): Obj => v as Obj;

/** The family's relations, in schema.json's order (a post-processor's own relations for its form only). */
function relations(doc: Obj): void {
  const model = obj(doc.get("model"));
  const post = obj(doc.get("post_processor"));
  const vocab = obj(model.get("vocab")) as Map<string, number>;
  const seen = new Set<number>();
  for (const [token, i] of vocab) {
    if (i >= vocab.size || seen.has(i)) {
      throw new Refused(pointer("/model/vocab", token), `has id ${i}: the ids must be 0 to ${vocab.size - 1}, each once`);
    }
    seen.add(i);
  }
  if (!vocab.has(model.get("unk_token") as string)) throw new Refused("/model/unk_token", "is not a token of model.vocab");
  (doc.get("added_tokens") as Obj[]).forEach((t, i) => {
    if (vocab.get(t.get("content") as string) !== t.get("id")) {
      throw new Refused(`/added_tokens/${i}`, "is not a token of model.vocab with that id");
    }
  });
  // Normalized added tokens (1.2) are matched in the normalized text: their content must be one
  // no normalizer of the family changes (printable ASCII, U+0021 to U+007E, without a capital letter).
  const unchanged = (c: string): boolean => c >= "!" && c <= "~" && !(c >= "A" && c <= "Z");
  (doc.get("added_tokens") as Obj[]).forEach((t, i) => {
    if (t.get("normalized") === true && ![...(t.get("content") as string)].every(unchanged)) {
      throw new Refused(`/added_tokens/${i}/content`, "is matched in the normalized text, so it must be printable ASCII without a capital letter");
    }
  });
  if (post.get("type") === "RobertaProcessing") { // MPNet's <s> A </s>: cls, then sep
    for (const which of ["cls", "sep"]) {
      const [name, id] = post.get(which) as [string, number];
      if (vocab.get(name) !== id) throw new Refused(`/post_processor/${which}`, "is not [a token of model.vocab, its id]");
    }
    return;
  }
  const specials = obj(post.get("special_tokens"));
  for (const [name, st] of specials as Map<string, Obj>) {
    const [id, ids, tokens] = [st.get("id"), st.get("ids") as number[], st.get("tokens") as string[]];
    if (!(id === name && tokens.length === 1 && tokens[0] === name && vocab.has(name) && ids[0] === vocab.get(name))) {
      throw new Refused(pointer("/post_processor/special_tokens", name), `must be {"id": NAME, "ids": [its vocabulary id], "tokens": [NAME]}`);
    }
  }
  for (const which of ["single", "pair"]) {
    (post.get(which) as Obj[]).forEach((piece, i) => {
      if (piece.has("SpecialToken") && !specials.has(obj(piece.get("SpecialToken")).get("id") as string)) {
        throw new Refused(`/post_processor/${which}/${i}/SpecialToken/id`, "is not a key of special_tokens");
      }
    });
  }
  const single = post.get("single") as Obj[];
  const kinds = single.map((p) => (p.has("SpecialToken") ? "SpecialToken" : obj(p.get("Sequence")).get("id")));
  if (kinds.join() !== "SpecialToken,A,SpecialToken" || single.some((p) => obj([...p.values()][0]).get("type_id") !== 0)) {
    throw new Refused("/post_processor/single", "must be [SpecialToken, Sequence A, SpecialToken] with type_id 0 (BERT's [CLS] A [SEP])");
  }
}

/** Parse and check a bundle's tokenizer.json; returns the document the tokenizer is built from. */
export function checkTokenizerJson(text: string): Obj {
  const doc = parseStrict(text);
  try {
    walk(doc, SCHEMA.tokenizer.document, "");
    relations(doc as Obj);
  } catch (e) {
    if (e instanceof Refused) {
      throw new BundleError("tokenizer.family", FIELD + e.at, `${FIELD} is outside the tokenizer family: ${e.at || "the document"} ${e.message}`);
    }
    throw e;
  }
  return doc as Obj;
}
