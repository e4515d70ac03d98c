/**
 * A bundle described for people: its labels, privacy facts, releases, encoder and sizes,
 * JSON-ready, every string from the bundle escaped. Reading a bundle's facts does not start the
 * encoder.
 */
import { Bin, type Value } from "./container.js";
import { DELTA_SUMMARY } from "./contract.js";
import type { Bundle } from "./reader.js";
import { escape } from "./text.js";

/** JSON-ready and escaped copy of values from the bundle (any msgpack). */
export function plain(v: Value, depth = 0): unknown {
  if (typeof v === "string") return escape(v);
  if (typeof v === "number") return Number.isFinite(v) ? v : String(v);
  if (typeof v === "bigint") return Number.isSafeInteger(Number(v)) ? Number(v) : v.toString();
  if (v === null || typeof v === "boolean") return v;
  if (v instanceof Bin) return `<${v.length} bytes>`;
  if (depth >= 8) return "...";
  if (Array.isArray(v)) return v.map((x) => plain(x, depth + 1));
  return Object.fromEntries([...v].map(([k, x]) => [escape(k), plain(x, depth + 1)]));
}

/**
 * A number by the contract's rule (docs/bundle-format.md section 5; Python's ".10g", Java's
 * Bundle.g10): the exact binary value rounded to 10 significant digits, ties to the even digit,
 * trailing zeros dropped, and an exponent ("1e-05") below 1e-4 or from 1e10 on (the rounded
 * value's exponent). The exact value is expanded in BigInt (toExponential rounds a tie up).
 */
export function short(x: number): string {
  if (!Number.isFinite(x)) return Number.isNaN(x) ? "nan" : x > 0 ? "inf" : "-inf";
  if (x === 0) return Object.is(x, -0) ? "-0" : "0";
  const sign = x < 0 ? "-" : "";
  let [digits, exp] = exactDecimal(Math.abs(x)); // the value is d1.d2d3... x 10^exp
  if (digits.length > 10) {
    const rest = digits.slice(10);
    const up = rest[0]! > "5" || (rest[0] === "5" && (/[1-9]/.test(rest.slice(1)) || Number(digits[9]) % 2 === 1));
    digits = up ? (BigInt(digits.slice(0, 10)) + 1n).toString() : digits.slice(0, 10);
    if (digits.length > 10) { // 9999999999 + 1: a new leading digit
      digits = digits.slice(0, 10);
      exp += 1;
    }
  }
  const d = digits.replace(/0+$/, "");
  if (exp < -4 || exp >= 10) {
    return `${sign}${d[0]}${d.length > 1 ? `.${d.slice(1)}` : ""}e${exp < 0 ? "-" : "+"}${String(Math.abs(exp)).padStart(2, "0")}`;
  }
  if (exp < 0) return `${sign}0.${"0".repeat(-exp - 1)}${d}`;
  const whole = d.slice(0, exp + 1).padEnd(exp + 1, "0");
  const frac = d.slice(exp + 1);
  return `${sign}${whole}${frac ? `.${frac}` : ""}`;
}

/**
 * The exact decimal expansion of a positive finite double: all its significant digits, and the
 * decimal exponent of the first (m x 2^e is m x 5^-e x 10^e when e < 0).
 */
function exactDecimal(a: number): [string, number] {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, a);
  const bits = view.getBigUint64(0);
  const biased = Number(bits >> 52n);
  const m = biased === 0 ? bits & 0xfffffffffffffn : (bits & 0xfffffffffffffn) | (1n << 52n);
  const e = biased === 0 ? -1074 : biased - 1075;
  const n = e >= 0 ? m << BigInt(e) : m * 5n ** BigInt(-e);
  const s = n.toString();
  const digits = s.replace(/0+$/, "");
  return [digits, s.length - 1 + Math.min(e, 0)];
}

/**
 * One line: the guarantee in the bundle's own words (runtime/describe.py privacy_summary). A
 * bundle with a head (1.1) says what delta is in the contract's words (DELTA_SUMMARY) and is
 * never called pure.
 */
export function privacySummary(b: Bundle): string {
  const parts = Object.values(b.releases).map((r) => `${r.statistic} eps ${short(r.epsilon)} (scale ${short(r.noise_scale)})`);
  const unit = escape(String(b.privacy.get("privacy_unit")));
  const h = b.head;
  if (h === null) {
    const batches = b.batches > 1 ? ` in each of ${b.batches} disjoint batches, summed` : "";
    return `epsilon = ${short(b.epsilon)}, delta = 0 (pure DP) per ${unit}, spent on ${parts.join(", ")}${batches}; ` +
      "discrete Laplace noise";
  }
  return `epsilon = ${short(b.epsilon)}, delta = ${short(b.delta)} (${DELTA_SUMMARY}) per ${unit}, spent on ` +
    `${parts.join(", ")}, head eps ${short(h.epsilon)} delta ` +
    `${short(h.delta)} (DP-SGD, ${h.steps} steps, sample rate ${short(h.sample_rate)}, noise multiplier ` +
    `${short(h.noise_multiplier)}); discrete Laplace and Gaussian noise`;
}

/** What the bundle is (sizes in bytes). */
export function bundleInfo(b: Bundle, fileBytes?: number): Record<string, unknown> {
  const e = b.encoder;
  const bytes = (...xs: ({ byteLength: number } | null)[]): number => xs.reduce((n, x) => n + (x?.byteLength ?? 0), 0);
  // A statistics bundle's encoder is in its pack, not in the file.
  const sizes: Record<string, number> = {
    [b.encoderPack === null ? "encoder" : "encoder_pack"]: bytes(e.model, e.weights, new TextEncoder().encode(e.tokenizerJson)),
  };
  if (b.classCounts) sizes["class_statistics"] = bytes(b.classCounts, b.classSums, b.origin, b.projection);
  if (b.votes) sizes["vote_tables"] = bytes(b.votes, b.hyperplanes, b.offsets);
  if (b.prior) sizes["prior"] = bytes(b.prior);
  if (b.head) sizes["head"] = bytes(b.head.origin, b.head.weights, b.head.bias);
  if (fileBytes !== undefined) sizes["file"] = fileBytes;
  return {
    format_version: b.version.join("."),
    labels: b.labels.map(escape),
    label_descriptions: b.labelDescriptions?.map(escape) ?? null,
    privacy: plain(b.privacy),
    releases: {
      ...Object.fromEntries(Object.values(b.releases).map((r) => [r.statistic, { ...r, mechanism: escape(r.mechanism) }])),
      // The head's privacy facts (1.1), not its arrays.
      ...(b.head === null ? {} : { head: headFacts(b.head) }),
    },
    hashing: b.hyperplanes === null ? null : { tables: b.dims.T, bits: b.dims.H, seed: b.seed === null ? null : plain(b.seed),
      offsets: b.offsets !== null },
    subspace_dim: b.projection === null ? null : b.dims.k,
    scoring: b.scoring === null ? null : { ...b.scoring },
    // The informational facts first: a checked field of the same name (a bundle's facts are free) wins.
    encoder: { ...(e.facts === null ? {} : plain(e.facts) as object), format: e.format, family: e.family, dim: e.dim,
      max_length: e.maxLength, text_prefix: escape(e.textPrefix),
      pack_sha256: b.encoderPack === null ? null : Array.from(b.encoderPack, (x) => x.toString(16).padStart(2, "0")).join("") },
    exporter: b.exporter === null ? null : plain(b.exporter),
    components: [["centroids", b.classSums], ["votes", b.votes], ["prior", b.prior], ["head", b.head]].filter(([, x]) => x !== null).map(([n]) => n),
    sizes_bytes: sizes,
  };
}

/** A head's facts for people: everything but its arrays, text escaped. */
function headFacts(h: NonNullable<Bundle["head"]>): Record<string, unknown> {
  const { origin: _o, weights: _w, bias: _b, ...facts } = h;
  return { ...facts, accountant: escape(h.accountant), mechanism: escape(h.mechanism) };
}
