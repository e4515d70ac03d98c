/**
 * The contract's exp and log (docs/bundle-format.md section 7.1; runtime/bundle/exactmath.py):
 * built only from correctly rounded double +, -, *, / and exact scaling by powers of two, in the
 * contract's order. Math.exp and Math.log (fdlibm ports in V8, other code in other engines) and
 * Python's libm differ in last bits, and the accountant's bound and the softmax are decisions:
 * with these, every reader computes the same bits. JavaScript numbers are IEEE doubles and no
 * engine fuses a multiply and an add, so each step here is one correctly rounded operation.
 */
import { SCHEMA } from "./contract.js";

const A = SCHEMA.arithmetic;
const BITS = new DataView(new ArrayBuffer(8));
const TWO54 = 18014398509481984; // 2^54, exact
const MIN_NORMAL = 2.2250738585072014e-308; // 2^-1022

/** 2^k exactly, for an integer k in [-1022, 1023] (a normal number), from its bits. */
function pow2(k: number): number {
  BITS.setUint32(0, (k + 1023) << 20, false);
  BITS.setUint32(4, 0, false);
  return BITS.getFloat64(0, false);
}

/** A normal, finite, positive x as [m, e] with x = m 2^e and 1 <= m < 2, exactly (from its bits). */
function split(x: number): [number, number] {
  BITS.setFloat64(0, x, false);
  const high = BITS.getUint32(0, false);
  const e = ((high >>> 20) & 0x7ff) - 1023;
  BITS.setUint32(0, (high & 0x800fffff) | (1023 << 20), false);
  return [BITS.getFloat64(0, false), e];
}

/** e^x: k = floor(x / ln 2 + 1/2), r = x - k ln 2 in two parts, Horner's Taylor sum, times 2^k. */
export function exp(x: number): number {
  if (Number.isNaN(x)) return x;
  if (x > A.exp_max) return Infinity;
  if (x < A.exp_min) return 0;
  const k = Math.floor(x * A.inv_ln2 + 0.5);
  const r = (x - k * A.ln2_hi) - k * A.ln2_lo;
  let p = 1.0;
  for (let i = A.exp_terms; i >= 1; i--) p = 1.0 + (r * p) / i;
  return p * pow2(k); // exact: both are normal numbers and so is the product
}

/** The natural log: x = m 2^e, m in (sqrt(2)/2, sqrt(2)], log m = 2 atanh((m - 1) / (m + 1)). */
export function log(x: number): number {
  if (Number.isNaN(x) || x < 0) return NaN;
  if (x === 0) return -Infinity;
  if (x === Infinity) return x;
  let e0 = 0;
  if (x < MIN_NORMAL) {
    x = x * TWO54;
    e0 = -54;
  }
  let [m, e] = split(x);
  if (m > A.sqrt2) {
    m = m / 2.0;
    e = e + 1;
  }
  const s = (m - 1.0) / (m + 1.0);
  const w = s * s;
  let t = 0.0;
  for (let i = A.log_terms; i >= 1; i--) t = w * (1.0 / (2 * i + 1) + t);
  const big = e + e0;
  return big * A.ln2_hi + (big * A.ln2_lo + (s + s * t) * 2.0);
}

/** log(1 + y), accurate near 0: with u = 1 + y rounded, log(u) (y / (u - 1)). */
export function log1p(y: number): number {
  if (Number.isNaN(y) || y < -1) return NaN;
  if (y === -1) return -Infinity;
  const u = 1.0 + y;
  if (u === 1.0) return y;
  return log(u) * (y / (u - 1.0));
}

/** e^x - 1, accurate near 0: Horner's sum of the series below expm1_below. */
export function expm1(x: number): number {
  if (Number.isNaN(x)) return x;
  if (Math.abs(x) < A.expm1_below) {
    let p = 1.0;
    for (let i = A.expm1_terms; i >= 2; i--) p = 1.0 + (x * p) / i;
    return x * p;
  }
  return exp(x) - 1.0;
}
