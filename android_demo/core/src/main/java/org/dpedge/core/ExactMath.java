package org.dpedge.core;

/**
 * The contract's exp and log (docs/bundle-format.md section 7.1; runtime/bundle/exactmath.py):
 * built only from correctly rounded double +, -, *, / and exact scaling by powers of two, in the
 * contract's order, so that the accountant's bound and the softmax are the same bits in every
 * reader. A platform's exp and log (Python's libm, fdlibm here and in V8) differ in last bits,
 * and the bound and the argmax are decisions. Java doubles are IEEE with no fused
 * multiply-add unless asked for (Math.fma is never used here).
 */
public final class ExactMath {
    static final double EXP_MIN = Contract.number("arithmetic.exp_min");
    static final double EXP_MAX = Contract.number("arithmetic.exp_max");
    static final int EXP_TERMS = (int) Contract.number("arithmetic.exp_terms");
    static final double EXPM1_BELOW = Contract.number("arithmetic.expm1_below");
    static final int EXPM1_TERMS = (int) Contract.number("arithmetic.expm1_terms");
    static final int LOG_TERMS = (int) Contract.number("arithmetic.log_terms");
    static final double INV_LN2 = Contract.number("arithmetic.inv_ln2");
    static final double LN2_HI = Contract.number("arithmetic.ln2_hi");
    static final double LN2_LO = Contract.number("arithmetic.ln2_lo");
    static final double SQRT2 = Contract.number("arithmetic.sqrt2");
    private static final double TWO54 = 18014398509481984.0;

    private ExactMath() {
    }

    /** e^x: k = floor(x / ln 2 + 1/2), r = x - k ln 2 in two parts, Horner's Taylor sum, times 2^k. */
    public static double exp(double x) {
        if (Double.isNaN(x)) {
            return x;
        }
        if (x > EXP_MAX) {
            return Double.POSITIVE_INFINITY;
        }
        if (x < EXP_MIN) {
            return 0.0;
        }
        double k = Math.floor(x * INV_LN2 + 0.5);
        double r = (x - k * LN2_HI) - k * LN2_LO;
        double p = 1.0;
        for (int i = EXP_TERMS; i >= 1; i--) {
            p = 1.0 + (r * p) / (double) i;
        }
        return Math.scalb(p, (int) k);  // exact: 2^k and the result are normal numbers
    }

    /** The natural log: x = m 2^e, m in (sqrt(2)/2, sqrt(2)], log m = 2 atanh((m - 1) / (m + 1)). */
    public static double log(double x) {
        if (Double.isNaN(x) || x < 0.0) {
            return Double.NaN;
        }
        if (x == 0.0) {
            return Double.NEGATIVE_INFINITY;
        }
        if (x == Double.POSITIVE_INFINITY) {
            return x;
        }
        int e0 = 0;
        if (x < Double.MIN_NORMAL) {
            x = x * TWO54;
            e0 = -54;
        }
        int e = Math.getExponent(x);  // x = m 2^e, 1 <= m < 2
        double m = Math.scalb(x, -e);
        if (m > SQRT2) {
            m = m / 2.0;
            e = e + 1;
        }
        double s = (m - 1.0) / (m + 1.0);
        double w = s * s;
        double t = 0.0;
        for (int i = LOG_TERMS; i >= 1; i--) {
            t = w * (1.0 / (double) (2 * i + 1) + t);
        }
        double big = (double) (e + e0);
        return big * LN2_HI + (big * LN2_LO + (s + s * t) * 2.0);
    }

    /** log(1 + y), accurate near 0: with u = 1 + y rounded, log(u) (y / (u - 1)). */
    public static double log1p(double y) {
        if (Double.isNaN(y) || y < -1.0) {
            return Double.NaN;
        }
        if (y == -1.0) {
            return Double.NEGATIVE_INFINITY;
        }
        double u = 1.0 + y;
        if (u == 1.0) {
            return y;
        }
        return log(u) * (y / (u - 1.0));
    }

    /** e^x - 1, accurate near 0: Horner's sum of the series below expm1_below. */
    public static double expm1(double x) {
        if (Double.isNaN(x)) {
            return x;
        }
        if (Math.abs(x) < EXPM1_BELOW) {
            double p = 1.0;
            for (int i = EXPM1_TERMS; i >= 2; i--) {
                p = 1.0 + (x * p) / (double) i;
            }
            return x * p;
        }
        return exp(x) - 1.0;
    }
}
