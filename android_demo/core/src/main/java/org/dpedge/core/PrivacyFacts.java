package org.dpedge.core;

import java.util.Map;

/**
 * One release's privacy facts as the bundle states them ({@code releases.<statistic>}): its
 * share of epsilon, the L1 sensitivity of one privacy unit, the noise scale, the mechanism in
 * words, and for the class sums their grid and clip. The reader has checked them against each
 * other (relations "shares", "noise scale", "clip" and "sensitivity"); an app shows them.
 */
public final class PrivacyFacts {
    private final String statistic;
    private final Map<?, ?> m;

    PrivacyFacts(String statistic, Map<?, ?> release) {
        this.statistic = statistic;
        this.m = release;
    }

    /**
     * "class_counts", "class_sums", "votes" or "unit_count" (1.3: the noisy number of persons,
     * beside a person-level head).
     */
    public String statistic() {
        return statistic;
    }

    /** This release's share of the bundle's epsilon. */
    public double epsilon() {
        return (Double) m.get("epsilon");
    }

    /** How far one privacy unit can move the released values, in L1 (K x one record's, and 1 for unit_count). */
    public long sensitivityL1() {
        return (Long) m.get("sensitivity_l1");
    }

    /** The noise scale on every value: sensitivity_l1 / epsilon. */
    public double noiseScale() {
        return (Double) m.get("noise_scale");
    }

    /** What was noised, in words (escape it before showing: {@link Text#escape}). */
    public String mechanism() {
        return (String) m.get("mechanism");
    }

    /** The class sums' grid steps per embedding unit (0 for the other releases). */
    public long grid() {
        return m.containsKey("grid") ? (Long) m.get("grid") : 0;
    }

    /** The class sums' L1 clip per record, in embedding units (0 for the other releases). */
    public double clipL1() {
        return m.containsKey("clip_l1") ? (Double) m.get("clip_l1") : 0.0;
    }
}
