package org.dpedge.core;

import java.util.List;

/**
 * The contract's bound on a head's (epsilon, delta) (format 1.1, docs/bundle-format.md section
 * 5; runtime/bundle/accounting.py): Renyi DP of the Poisson-sampled Gaussian mechanism at the
 * integer orders of schema.json "accountant", converted to (epsilon, delta). The reader refuses
 * a head that claims less epsilon than this (relation "accountant").
 *
 * <p>The same operations in the same order as the reference: each order's terms in log space,
 * the binomial coefficients' logs by the running recurrence, the largest term taken out and the
 * rest's exps summed in index order; log1p and expm1 where it uses them. {@link ExactMath}
 * throughout (the contract's own exp and log, section 7.1): the same bits as the Python and web
 * readers, so a head at the edge of the bound gets one answer from all three.
 */
public final class Accountant {
    /** The integer Renyi orders evaluated, lowest first (schema.json "accountant": orders). */
    static final int LOWEST_ORDER;
    static final int HIGHEST_ORDER;
    /** A head may claim this much (relative) less epsilon than the bound before it is refused. */
    static final double RTOL = Contract.number("accountant.rtol");

    static {
        List<Object> orders = Contract.list("accountant.orders");
        LOWEST_ORDER = ((Number) orders.get(0)).intValue();
        HIGHEST_ORDER = ((Number) orders.get(1)).intValue();
    }

    private Accountant() {
    }

    /** log A_a of the Poisson-sampled Gaussian at integer order {@code order} (section 5). */
    static double logMoment(double noiseMultiplier, double sampleRate, int order) {
        double q = sampleRate;
        long a = order;
        double inv = 1.0 / (2.0 * noiseMultiplier * noiseMultiplier);
        if (q >= 1.0) {
            return (double) (a * a - a) * inv;
        }
        double logQ = ExactMath.log(q);
        double log1q = ExactMath.log1p(-q);
        double[] terms = new double[order + 1];
        double logBinom = 0.0;
        for (long j = 0; j <= a; j++) {
            if (j > 0) {
                logBinom += ExactMath.log((double) (a - j + 1)) - ExactMath.log((double) j);
            }
            terms[(int) j] = logBinom + (double) j * logQ + (double) (a - j) * log1q + (double) (j * j - j) * inv;
        }
        double top = terms[0];
        for (double t : terms) {
            if (t > top) {
                top = t;
            }
        }
        double total = 0.0;
        for (double t : terms) {  // in index order: every reader adds alike
            total += ExactMath.exp(t - top);
        }
        return top + ExactMath.log(total);
    }

    /**
     * The least epsilon over the contract's orders for {@code steps} Poisson-sampled Gaussian
     * steps at noise multiplier {@code noiseMultiplier}, sample rate {@code sampleRate} and
     * {@code delta} (at least 0).
     */
    public static double headEpsilon(double noiseMultiplier, double sampleRate, long steps, double delta) {
        double best = Double.POSITIVE_INFINITY;
        for (int a = LOWEST_ORDER; a <= HIGHEST_ORDER; a++) {
            double rdp = (double) steps * (logMoment(noiseMultiplier, sampleRate, a) / (double) (a - 1));
            double eps;
            if (delta * delta + ExactMath.expm1(-rdp) > 0) {
                eps = 0.0;
            } else {
                eps = rdp + ExactMath.log1p(-1.0 / a) - ExactMath.log(delta * a) / (double) (a - 1);
            }
            if (eps < best) {  // Python's min(best, eps): the first of equals
                best = eps;
            }
        }
        return Math.max(0.0, best);
    }
}
