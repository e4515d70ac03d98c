package org.dpedge.core;

import java.math.BigDecimal;
import java.util.Map;

/**
 * One release's privacy facts as the bundle states them ({@code releases.<statistic>}): its
 * share of epsilon, the L1 sensitivity of one privacy unit, the discrete Laplace scale, the
 * mechanism in words, and for the class sums their grid and clip. An app shows these
 * ({@link Bundle#releases()}); its noisy values live in the {@link Bundle}.
 *
 * <p>{@link #check} holds the statements to each other as the Python reader does (relations
 * "shares", "noise scale" and "sensitivity" of {@code docs/bundle-format.md} section 4): a
 * reader cannot prove that noise was added, but it refuses a bundle whose own statements
 * contradict each other. Floats are compared with Python's {@code math.isclose} at a relative
 * tolerance of {@link #RTOL}, since the writer derives them by float arithmetic.
 */
public final class PrivacyFacts {
    static final String CLASS_COUNTS = "class_counts";
    static final String CLASS_SUMS = "class_sums";
    static final String VOTES = "votes";
    /** The statistics a bundle can release, in release order. */
    static final String[] STATISTICS = {CLASS_COUNTS, CLASS_SUMS, VOTES};
    static final double RTOL = 1e-9;

    private final String statistic;
    private final double epsilon;
    private final long sensitivityL1;
    private final double noiseScale;
    private final String mechanism;
    private final long grid;
    private final double clipL1;

    PrivacyFacts(String statistic, Map<?, ?> release) {
        this.statistic = statistic;
        this.epsilon = (Double) release.get("epsilon");
        this.sensitivityL1 = (Long) release.get("sensitivity_l1");
        this.noiseScale = (Double) release.get("noise_scale");
        this.mechanism = (String) release.get("mechanism");
        this.grid = release.containsKey("grid") ? (Long) release.get("grid") : 0;
        this.clipL1 = release.containsKey("clip_l1") ? (Double) release.get("clip_l1") : 0.0;
    }

    /** "class_counts", "class_sums" or "votes". */
    public String statistic() {
        return statistic;
    }

    /** This release's share of the bundle's epsilon. */
    public double epsilon() {
        return epsilon;
    }

    /** How far one privacy unit can move the released values, in L1. */
    public long sensitivityL1() {
        return sensitivityL1;
    }

    /** The discrete Laplace scale of the noise on every value: sensitivity_l1 / epsilon. */
    public double noiseScale() {
        return noiseScale;
    }

    /** What was noised, in words (escape it before showing: {@link Text#escape}). */
    public String mechanism() {
        return mechanism;
    }

    /** The class sums' grid steps per embedding unit (0 for the other releases). */
    public long grid() {
        return grid;
    }

    /** The class sums' L1 clip per record, in embedding units (0 for the other releases). */
    public double clipL1() {
        return clipL1;
    }

    /**
     * The relations among the statements, in the Python reader's order: the shares add up to
     * the bundle's epsilon, then for each release its noise scale is its sensitivity over its
     * share and its sensitivity is what K records per unit move (K for the counts, K x
     * round(grid x clip), at least 1, for the sums, K x T for the votes).
     */
    static void check(Map<String, PrivacyFacts> releases, double epsilon, long perUnit, int tables)
            throws BundleException {
        BigDecimal exact = BigDecimal.ZERO;  // Python's math.fsum: the correctly rounded sum
        for (PrivacyFacts r : releases.values()) {
            exact = exact.add(new BigDecimal(r.epsilon));
        }
        double total = exact.doubleValue();
        if (!isClose(total, epsilon)) {
            throw new BundleException("the releases spend epsilon " + Text.pyFloat(total) + ", but field "
                    + "'privacy.epsilon' is " + Text.pyFloat(epsilon) + ": their shares must add up to it");
        }
        for (PrivacyFacts r : releases.values()) {
            String where = "field 'releases." + r.statistic;
            double needed = r.sensitivityL1 / r.epsilon;
            if (!isClose(r.noiseScale, needed)) {
                throw new BundleException(where + ".noise_scale' is " + Text.pyFloat(r.noiseScale) + ", but sensitivity "
                        + r.sensitivityL1 + " at epsilon " + Text.pyFloat(r.epsilon) + " needs " + Text.pyFloat(needed)
                        + ": the privacy facts contradict each other");
            }
            long one = r.statistic.equals(VOTES) ? tables : 1;
            if (r.statistic.equals(CLASS_SUMS)) {
                one = (long) Math.rint(r.grid * r.clipL1);  // Python's round(): half to even
                if (one < 1) {
                    throw new BundleException(where + ".clip_l1' is " + Text.pyFloat(r.clipL1)
                            + ": less than one grid step of 1/" + r.grid);
                }
            }
            // K x one may pass a long (1e6 x 2^62): then it is no sensitivity a release can state.
            long stated = Long.MAX_VALUE / perUnit < one ? -1 : perUnit * one;
            if (r.sensitivityL1 != stated) {
                throw new BundleException(where + ".sensitivity_l1' is " + r.sensitivityL1 + ", but a " + r.statistic
                        + " release with at most " + perUnit + " record(s) per unit has " + perUnit + " x " + one
                        + ": the privacy facts contradict each other");
            }
        }
    }

    /** Python's {@code math.isclose(a, b, rel_tol=RTOL)}. */
    static boolean isClose(double a, double b) {
        return a == b || Math.abs(a - b) <= RTOL * Math.max(Math.abs(a), Math.abs(b));
    }
}
