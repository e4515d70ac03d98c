/**
 * The contract's files, format/1/schema.json (the format as data) and format/1/unicode.json
 * (the Unicode tables), imported as JSON modules: the build bundles them, nothing restates
 * them. The interfaces below type the parts this runtime reads.
 */
import schemaJson from "../../format/1/schema.json" with { type: "json" };
import unicodeJson from "../../format/1/unicode.json" with { type: "json" };

export interface FieldRow {
  readonly path: string;
  readonly kind: "map" | "str" | "int" | "float" | "bool" | "bin" | "version" | "strings" | "ndarray";
  readonly need: string;
  readonly low?: number;
  readonly high?: number;
  readonly dtype?: string;
  readonly shape?: readonly string[];
  readonly choices?: readonly string[];
  readonly text?: string;
  readonly open?: boolean;
  /** The minor version that added the field (absent: 1.0). */
  readonly since?: readonly [number, number];
  /** Present, it must be in requires (relation "listed"): its absence would change an answer. */
  readonly listed?: boolean;
}

/** A node of the tokenizer family's document schema (schema.json "tokenizer"). */
export interface Shape {
  readonly type?: "object" | "map" | "array" | "tuple" | "string" | "integer" | "boolean";
  readonly ref?: string;
  /** An object whose key `tagged` names its form (1.2: a post-processor's "type"), checked against that form. */
  readonly tagged?: string;
  readonly forms?: Readonly<Record<string, Shape>>;
  readonly nullable?: boolean;
  readonly optional?: boolean;
  readonly one_of?: readonly Shape[];
  readonly const?: unknown;
  readonly enum?: readonly string[];
  readonly keys?: readonly (readonly [string, Shape])[];
  readonly values?: Shape;
  /** An array's node for every item; a tuple's (1.2) one node per item, in order. */
  readonly items?: Shape | readonly Shape[];
  readonly key_length?: readonly [number, number];
  readonly min_items?: number;
  readonly max_items?: number;
  readonly min_length?: number;
  readonly max_length?: number;
  readonly min?: number;
  readonly max?: number;
}

export type Condition =
  | { readonly present_any: readonly string[] }
  | { readonly present_all: readonly string[] }
  | { readonly present_none: readonly string[] }
  | { readonly equals: readonly [string, string] };

export interface Schema {
  readonly format: string;
  readonly version: readonly [number, number];
  /** The magic of an encoder pack (1.1). */
  readonly pack_format: string;
  readonly pre_release_name: string;
  readonly statistics: readonly string[];
  readonly container: {
    readonly digest_tail_hex: string;
    readonly digest_bytes: number;
    readonly max_bundle_bytes: number;
    readonly max_depth: number;
    readonly bytes_per_value: number;
    readonly value_allowance: number;
    readonly max_container: number;
  };
  readonly fields: readonly FieldRow[];
  readonly dtypes: Readonly<Record<string, number>>;
  readonly dims: Readonly<Record<string, { readonly low: number; readonly high: number }>>;
  readonly conditions: Readonly<Record<string, Condition & { readonly doc: string }>>;
  readonly text: {
    readonly kinds: Readonly<Record<string, { readonly max_chars: number; readonly rules: readonly string[] }>>;
    readonly unprintable: readonly number[];
  };
  /** The contract's bound on a head's epsilon (1.1): the integer Renyi orders [low, high] and the relation's tolerance. */
  readonly accountant: { readonly orders: readonly [number, number]; readonly rtol: number };
  /** Section 7.1's exp and log: their constants and series lengths (1.2). */
  readonly arithmetic: {
    readonly exp_min: number; readonly exp_max: number; readonly exp_terms: number; readonly expm1_below: number;
    readonly expm1_terms: number; readonly log_terms: number; readonly inv_ln2: number; readonly ln2_hi: number;
    readonly ln2_lo: number; readonly sqrt2: number;
  };
  readonly privacy_rtol: number;
  readonly check_norm: readonly [number, number];
  readonly max_work: number;
  readonly wording: {
    readonly record: { readonly privacy_unit: string; readonly neighbour_relation: string };
    readonly person: {
      readonly privacy_unit: string;
      readonly neighbour_relation_prefix: string;
      readonly neighbour_relation_suffix: string;
    };
    /** What delta is (1.1), the one wording every reader shows: a short form and the definition. */
    readonly delta: { readonly summary: string; readonly statement: string };
    /** How the releases compose (1.2, relation "composition"): {releases}, {batches}, {within} replaced. */
    readonly composition: { readonly pure: string; readonly head: string; readonly batches: string; readonly separator: string };
  };
  readonly tokenizer: {
    readonly max_depth: number;
    readonly max_integer: number;
    readonly document: Shape;
    readonly definitions: Readonly<Record<string, Shape>>;
  };
  /**
   * The encoder families (1.2; encoder.family, absent: bert): the encoder formats each is read
   * in, and the ONNX operators of its own, allowed beside the common onnx.ops.
   */
  readonly families: Readonly<Record<string, {
    readonly formats: readonly string[];
    readonly onnx_ops: readonly (readonly [string, string])[];
  }>>;
  readonly onnx: {
    readonly domains: readonly string[];
    readonly ops: readonly (readonly [string, string])[];
    readonly max_nodes: number;
    readonly optional_inputs: readonly (readonly [string, string, readonly number[]])[];
    readonly weights_location: string;
    readonly weights_location_bytes: number;
    readonly number_digits: number;
  };
  readonly tflite: {
    readonly ops: Readonly<Record<string, number>>;
    readonly max_operators: number;
    readonly max_operator_codes: number;
    readonly max_subgraphs: number;
    readonly max_signatures: number;
    readonly max_signature_tensors: number;
    readonly optional_inputs: Readonly<Record<string, readonly number[]>>;
    readonly absent_fields: Readonly<Record<"Tensor" | "Operator", Readonly<Record<string, number>>>>;
  };
  readonly encoder: {
    readonly check_min_cosine: number;
    readonly arena_bytes: number;
    readonly load_run_seconds: number;
    readonly query_run_seconds: number;
    readonly wall_factor: number;
    readonly onnx_session_config: Readonly<Record<string, string>>;
  };
  readonly scoring: { readonly near_zero: number; readonly unit_min_norm: number; readonly boost_max: number };
  readonly query: { readonly max_chars: number };
  readonly chinese: readonly number[];
  readonly tokenize: {
    readonly ascii_punctuation: string;
    readonly clean_text_removes: readonly number[];
    readonly clean_text_keeps: readonly number[];
  };
  readonly errors: Readonly<Record<string, string>>;
}

export interface UnicodeTables {
  readonly unicode_version: string;
  readonly sets: Readonly<Record<
    "control" | "whitespace" | "punctuation" | "nonspacing_mark" | "unassigned" | "default_ignorable" | "blank",
    readonly number[]
  >>;
  readonly combining_class: readonly number[];
  readonly decomposition: readonly number[];
  readonly compatibility: readonly number[];
  readonly lowercase: readonly number[];
  readonly confusable: readonly number[];
}

export const SCHEMA = schemaJson as unknown as Schema;
export const UNICODE = unicodeJson as unknown as UnicodeTables;

/**
 * What delta is, in the contract's words (schema.json "wording" "delta"): the short form a
 * one-line summary puts in parentheses, and the statement of the definition. Delta is the
 * additive slack in P[M(D) in S] <= e^epsilon P[M(D') in S] + delta, never a probability that
 * the epsilon bound fails; every reader shows these words, never its own.
 */
export const DELTA_SUMMARY: string = SCHEMA.wording.delta.summary;
export const DELTA_STATEMENT: string = SCHEMA.wording.delta.statement;

/**
 * The contract's settings of every ONNX session (schema.json "encoder", onnx_session_config: no
 * constant folding, which runs where a load cannot be stopped), as onnxruntime's JavaScript
 * `extra` option: "optimization.disable_specified_optimizers" becomes { optimization: {...} }.
 */
export function onnxSessionExtra(): Record<string, Record<string, string>> {
  const extra: Record<string, Record<string, string>> = {};
  for (const [key, value] of Object.entries(SCHEMA.encoder.onnx_session_config)) {
    const dot = key.indexOf(".");
    (extra[key.slice(0, dot)] ??= {})[key.slice(dot + 1)] = value;
  }
  return extra;
}
