package org.dpedge.core;

import java.util.Map;

/**
 * The head release's privacy facts as the bundle states them ({@code releases.head}, format
 * 1.1): a linear softmax layer trained by DP-SGD, the bundle's one approximate (epsilon, delta)
 * guarantee, for one record or (1.3) one person with up to K records, beside the noisy number
 * of persons (unit_count). The reader has checked them against each other and against the
 * contract's accountant (relations "head", "unit count", "shares", "delta", "noise scale",
 * "clip", "sensitivity" and "accountant"); an app shows them, delta in words
 * ({@link Bundle#privacySummary()}). The head's arrays (origin, weights, bias) are the
 * {@link Scorer}'s.
 */
public final class HeadFacts {
    private final Map<?, ?> m;

    HeadFacts(Map<?, ?> head) {
        this.m = head;
    }

    /** The head's share of the bundle's epsilon. */
    public double epsilon() {
        return (Double) m.get("epsilon");
    }

    /**
     * Its delta: the bundle's, the additive slack in the definition, not a probability that the
     * epsilon bound fails ({@link Bundle#deltaStatement()}, the contract's words).
     */
    public double delta() {
        return (Double) m.get("delta");
    }

    /**
     * How far one unit (a record, or a person's records clipped together: K above 1, 1.3) moves
     * one step's gradient sum, in L2 and grid units: round(grid x clip_l2).
     */
    public long sensitivityL2() {
        return (Long) m.get("sensitivity_l2");
    }

    /** The Gaussian's standard deviation in grid units: noise_multiplier x sensitivity_l2. */
    public double noiseScale() {
        return (Double) m.get("noise_scale");
    }

    /** sigma over the sensitivity. */
    public double noiseMultiplier() {
        return (Double) m.get("noise_multiplier");
    }

    /** q: each unit (a record, or a person) joins a step's batch with this probability (Poisson sampling). */
    public double sampleRate() {
        return (Double) m.get("sample_rate");
    }

    /** T: noisy gradient steps. */
    public long steps() {
        return (Long) m.get("steps");
    }

    /** Grid steps per gradient unit. */
    public long grid() {
        return (Long) m.get("grid");
    }

    /** Each unit's L2 gradient clip (a person's records' gradients summed, then clipped together). */
    public double clipL2() {
        return (Double) m.get("clip_l2");
    }

    /** Informational: the accountant the exporter calibrated with (escape it before showing: {@link Text#escape}). */
    public String accountant() {
        return (String) m.get("accountant");
    }

    /** What was noised, in words (escape it before showing: {@link Text#escape}). */
    public String mechanism() {
        return (String) m.get("mechanism");
    }
}
