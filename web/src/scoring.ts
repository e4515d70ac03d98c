/**
 * Scores from the released statistics (docs/bundle-format.md section 7),
 * float64 throughout; the label is the argmax, ties to the lower class index.
 *
 * - Vote tables without class statistics (Algorithm 2): bit h of table t is 1 iff
 *   hyperplanes[t, h] . x > offsets[t, h] (the product summed in ascending order, as Python
 *   and Java do); the bucket is sum_h bit_h 2^h; v_c is the sum over tables of
 *   votes[t, bucket_t, c], and score_c = max(v_c, 0) over the sum of those (uniform when every
 *   v_c is at most 0).
 * - Otherwise the blend [softmax(centroid) + boost x softmax(prior) [with a prior] + pos / sum(pos)
 *   [with vote tables, uniform when pos is all 0]] / W, W = 1 + boost + [1 with vote tables],
 *   the class sums first pulled toward their descriptions, a query whose |z| (or |x|) is at
 *   most NEAR_ZERO scoring 0 on that component (a uniform softmax).
 *
 * - A bundle with a head (format 1.1) is scored by it alone: logit_c = sum over d, in ascending
 *   order, of (x_d - origin_d) weights[c, d], plus bias[c]; the scores are softmax(logits), the
 *   largest logit subtracted before exp.
 *
 * Either way the scores are a distribution over the labels: non-negative, summing to 1.
 *
 * Every step follows section 7 in its order (as the Python and Java readers do): z = P x - P o
 * first, then each dot product summed in ascending order, the contract's exp in the softmax. No
 * product is folded ahead, so the scores are the same bits in every reader and so is the label,
 * exact ties included. Everything that depends only on the bundle is prepared once.
 */
import { SCHEMA } from "./contract.js";
import { exp } from "./exactmath.js";
import type { Bundle } from "./reader.js";

/** A query whose |z| (or |x|) is at most this has no direction: its cosines are 0. */
const { near_zero: NEAR_ZERO, unit_min_norm: UNIT_MIN_NORM, boost_max: BOOST_MAX } = SCHEMA.scoring;

/** min(R C K / (epsilon N), 1e6), N the released record count (at least 1). */
export function priorBoost(b: Bundle): number {
  let n = 0;
  for (const c of b.classCounts!) n += c;
  n = Math.max(n, 1);
  const rc = b.scoring!.prior_records_per_class * b.labels.length * b.recordsPerUnit;
  return Math.min(rc / (b.epsilon * n), BOOST_MAX);
}

/** dot(u, v) over n values from the given offsets, summed in ascending order (section 7). */
function dot(u: ArrayLike<number>, ui: number, v: ArrayLike<number>, vi: number, n: number): number {
  let s = 0;
  for (let i = 0; i < n; i++) s += u[ui + i]! * v[vi + i]!;
  return s;
}

/** Each row of a [rows, cols] matrix over max(its norm, unit_min_norm), then over `temperature`. */
function unitRows(a: Float64Array, rows: number, cols: number, temperature = 1): Float64Array {
  const out = new Float64Array(a.length);
  for (let r = 0; r < rows; r++) {
    const norm = Math.max(Math.sqrt(dot(a, r * cols, a, r * cols, cols)), UNIT_MIN_NORM);
    for (let j = 0; j < cols; j++) out[r * cols + j] = a[r * cols + j]! / norm / temperature;
  }
  return out;
}

/** Section 7's softmax: the largest subtracted, the contract's exp, the sum in index order. */
function softmax(z: Float64Array): Float64Array {
  let max = -Infinity;
  for (const v of z) max = Math.max(max, v);
  const e = z.map((v) => exp(v - max));
  let sum = 0;
  for (const v of e) sum += v;
  return e.map((v) => v / sum);
}

/** SimHash buckets of one embedding, one per table (runtime/simhash.py). */
export class SimHasher {
  constructor(private readonly planes: Float32Array, private readonly offsets: Float32Array | null,
              readonly tables: number, readonly bits: number, readonly dim: number) {}

  buckets(x: Float64Array): number[] {
    const out: number[] = [];
    for (let t = 0; t < this.tables; t++) {
      let bucket = 0;
      for (let h = 0; h < this.bits; h++) {
        const d = dot(x, 0, this.planes, (t * this.bits + h) * this.dim, this.dim);
        if (d > (this.offsets === null ? 0 : this.offsets[t * this.bits + h]!)) bucket |= 1 << h;
      }
      out.push(bucket);
    }
    return out;
  }
}

/** Scores embeddings against one bundle. */
export class Scorer {
  readonly classes: number;
  readonly hasher: SimHasher | null;
  /** Algorithm 2 (summed raw votes) when there are no class statistics to blend with. */
  readonly plainVotes: boolean;
  /** The prior's weight in the blend (0 without a prior or without class statistics). */
  readonly boost: number = 0;
  private readonly b: Bundle;
  private readonly k: number = 0;
  private readonly dim: number;
  /** P (k, D) as stored, P o, the class directions over tau_c (C, k), the prior's unit rows over tau_p (C, D). */
  private readonly projection: Float32Array | null = null;
  private readonly shift: Float64Array | null = null;
  private readonly directions: Float64Array | null = null;
  private readonly priorRows: Float64Array | null = null;
  private readonly hasPrior: boolean;

  constructor(b: Bundle) {
    this.b = b;
    const { C, D, k } = b.dims;
    this.classes = C;
    this.dim = D;
    this.hasPrior = b.prior !== null;
    this.hasher = b.hyperplanes === null ? null : new SimHasher(b.hyperplanes, b.offsets, b.dims.T, b.dims.H, D);
    this.plainVotes = b.votes !== null && b.classSums === null;
    if (b.classSums === null || b.head !== null) return;
    this.boost = this.hasPrior ? priorBoost(b) : 0;
    this.k = k;
    const proj = b.projection!;
    const shift = new Float64Array(k); // P o
    for (let r = 0; r < k; r++) shift[r] = dot(b.origin!, 0, proj, r * D, D);
    const sums = b.classSums;
    const release = b.releases["class_sums"]!;
    let s = new Float64Array(C * k);
    for (let i = 0; i < C * k; i++) s[i] = sums[i]! / release.grid!;
    // A sum of B batches' releases carries B independent noises: the variance grows B-fold.
    const nu = (Math.sqrt(2 * k * b.batches) * release.noise_scale) / release.grid!;
    const strength = b.scoring!.description_pull * nu;
    if (this.hasPrior && strength > 0) {
      const m = Math.max(1, strength);
      const pe = new Float64Array(C * k); // P e_c - P o
      for (let c = 0; c < C; c++) {
        for (let r = 0; r < k; r++) pe[c * k + r] = dot(b.prior!, c * D, proj, r * D, D) - shift[r]!;
      }
      const pull = unitRows(pe, C, k);
      s = s.map((v, i) => v / m + (strength / m) * pull[i]!);
    }
    this.projection = proj;
    this.shift = shift;
    this.directions = unitRows(s, C, k, b.scoring!.centroid_temperature);
    this.priorRows = this.hasPrior ? unitRows(Float64Array.from(b.prior!), C, D, b.scoring!.prior_temperature) : null;
  }

  /** Per-class vote sums of the query's buckets (negative cells read as 0 when `positive`). */
  private voteSums(x: Float64Array, positive: boolean): Float64Array {
    const { C, H } = this.b.dims;
    const votes = this.b.votes!;
    const out = new Float64Array(C);
    this.hasher!.buckets(x).forEach((bucket, t) => {
      const row = ((t << H) + bucket) * C;
      for (let c = 0; c < C; c++) out[c] = out[c]! + (positive ? Math.max(votes[row + c]!, 0) : votes[row + c]!);
    });
    return out;
  }

  /** Per-class scores of one embedding (D floats), float64; the label is the argmax. */
  scores(embedding: ArrayLike<number>): Float64Array {
    const x = Float64Array.from(embedding);
    if (this.b.head !== null) return headScores(this.b.head, x, this.classes, this.dim);
    if (this.plainVotes) return shares(this.voteSums(x, false).map((v) => Math.max(v, 0)));
    const C = this.classes;
    const k = this.k;
    const D = this.dim;
    const z = new Float64Array(k); // z = P x - P o, value by value
    for (let r = 0; r < k; r++) z[r] = dot(x, 0, this.projection!, r * D, D) - this.shift![r]!;
    const zNorm = Math.sqrt(dot(z, 0, z, 0, k));
    const centroid = new Float64Array(C);
    for (let c = 0; c < C; c++) centroid[c] = zNorm > NEAR_ZERO ? dot(z, 0, this.directions!, c * k, k) / zNorm : 0;
    const out = softmax(centroid);
    if (this.hasPrior) {
      const xNorm = Math.sqrt(dot(x, 0, x, 0, D));
      const prior = new Float64Array(C);
      for (let c = 0; c < C; c++) prior[c] = xNorm > NEAR_ZERO ? dot(x, 0, this.priorRows!, c * D, D) / xNorm : 0;
      const p = softmax(prior);
      for (let c = 0; c < C; c++) out[c] = out[c]! + this.boost * p[c]!;
    }
    let weight = 1 + this.boost;
    if (this.b.votes !== null) {
      const q = shares(this.voteSums(x, true));
      for (let c = 0; c < C; c++) out[c] = out[c]! + q[c]!;
      weight += 1;
    }
    return out.map((v) => v / weight);
  }
}

/** A head's scores (1.1): softmax(W (x - origin) + b), each logit summed over d in ascending order, in float64. */
function headScores(h: { origin: Float32Array; weights: Float32Array; bias: Float32Array }, x: Float64Array, C: number,
                    D: number): Float64Array {
  const logits = new Float64Array(C);
  for (let c = 0; c < C; c++) {
    let s = 0;
    for (let d = 0; d < D; d++) s += (x[d]! - h.origin[d]!) * h.weights[c * D + d]!;
    logits[c] = s + h.bias[c]!;
  }
  return softmax(logits);
}

/** Non-negative vote sums over their total; all zeros is uniform (no votes say nothing). */
function shares(pos: Float64Array): Float64Array {
  let total = 0;
  for (const v of pos) total += v;
  return pos.map((v) => (total > 0 ? v / total : 1 / pos.length));
}

/** The argmax, ties to the lower index. */
export function argmax(scores: ArrayLike<number>): number {
  let best = 0;
  for (let i = 1; i < scores.length; i++) if (scores[i]! > scores[best]!) best = i;
  return best;
}
