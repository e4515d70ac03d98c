/**
 * The contract's bound on a linear head's (epsilon, delta) (format 1.1; docs/bundle-format.md
 * section 5): Renyi DP of the Poisson-sampled Gaussian mechanism at the integer orders of
 * schema.json "accountant", converted to (epsilon, delta). A port of
 * runtime/bundle/accounting.py with the same operations in the same order (log-space terms by
 * the running log-binomial recurrence, their max, then the sum of exp(term - max) in index
 * order), with the contract's own exp and log (section 7.1, ./exactmath.ts): the readers
 * compute the same bits, so a head at the edge of the bound gets one answer from all three.
 */
import { SCHEMA } from "./contract.js";
import { exp, expm1, log, log1p } from "./exactmath.js";

const [LOW, HIGH] = SCHEMA.accountant.orders;
/** The integer Renyi orders the contract evaluates. */
export const ORDERS: readonly number[] = Array.from({ length: HIGH - LOW + 1 }, (_, i) => LOW + i);
/** A head may claim an epsilon this much (relative) below the bound before it is refused. */
export const ACCOUNTANT_RTOL: number = SCHEMA.accountant.rtol;

/** log A_a of the Poisson-sampled Gaussian at integer order `order`. */
export function logMoment(noiseMultiplier: number, sampleRate: number, order: number): number {
  const q = sampleRate;
  const a = order;
  const inv = 1.0 / (2.0 * noiseMultiplier * noiseMultiplier);
  if (q >= 1.0) return (a * a - a) * inv;
  const logQ = log(q);
  const log1Q = log1p(-q);
  const terms = new Float64Array(a + 1);
  let logBinom = 0.0;
  for (let j = 0; j <= a; j++) {
    if (j > 0) logBinom += log(a - j + 1) - log(j);
    terms[j] = logBinom + j * logQ + (a - j) * log1Q + (j * j - j) * inv;
  }
  let top = terms[0]!;
  for (let j = 1; j <= a; j++) if (terms[j]! > top) top = terms[j]!; // Python's max: the first of the largest
  let total = 0.0;
  for (const t of terms) total += exp(t - top); // in index order: every reader adds alike
  return top + log(total);
}

/** The least epsilon over `ORDERS` for `steps` Poisson-sampled Gaussian steps at `delta` (at least 0). */
export function headEpsilon(noiseMultiplier: number, sampleRate: number, steps: number, delta: number): number {
  let best = Infinity;
  for (const a of ORDERS) {
    const rdp = steps * (logMoment(noiseMultiplier, sampleRate, a) / (a - 1));
    const eps = delta * delta + expm1(-rdp) > 0 ? 0.0 : rdp + log1p(-1.0 / a) - log(delta * a) / (a - 1);
    if (eps < best) best = eps; // Python's min(best, eps)
  }
  return best > 0.0 ? best : 0.0; // Python's max(0.0, best)
}
