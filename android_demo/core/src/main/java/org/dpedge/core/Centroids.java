package org.dpedge.core;

/**
 * The centroid component of the blend: {@code softmax(logits / tau_c)} from the released class
 * statistics, with the logits of the bundle's {@code centroid_rule} ({@code runtime/scoring.py}
 * and {@code runtime/centroids.py}; {@code docs/bundle-format.md} section 9). With
 * {@code zraw = P x - P origin} the query in the public subspace:
 *
 * <ul>
 *   <li>"cosine_public" (format 3.0, what the exporter writes): {@code logit_c = cos(zraw, S_c)}
 *       with {@code S_c} the released noisy class sum (row c of {@code class_stats.sums}); the
 *       counts do not enter, and a zero vector on either side gives a cosine of 0. Why: the sum
 *       points where the class mean does in the public-centred frame, and a cosine ignores the
 *       query's scale. From format 4.0 each sum is first pulled toward its label
 *       description: {@code S_c / m + (p / m) unit(P e_c - P origin)} with {@code p = a nu},
 *       a the bundle's {@code description_pull}, nu the noise's root-mean-square norm
 *       ({@link Scorer#sumsNoiseNorm}) and {@code m = max(1, p)} (only the direction is read, so
 *       the division keeps any stated number from overflowing). Why: a prior on each class
 *       mean weighted by the noise; a small class's sum, mostly noise, leans on its
 *       description.</li>
 *   <li>"gaussian" (format 2.1): {@code zraw} is clipped to L1 norm at most
 *       {@code B = centroid_clip_l1}, exactly as the exporter clipped each record before summing
 *       it ({@link #clipL1}), then {@code z = clipped - mu} and
 *       {@code logit_c = <z, m_c> - |m_c|^2 / 2} with the centred class means {@code m_c} and
 *       the overall mean {@code mu} (counts floored at 1, {@link #centredMeans}): the nearest
 *       class mean in Euclidean distance.</li>
 *   <li>"cosine" (a format-2.0 bundle, whose map names no rule, and the default):
 *       {@code logit_c = cos(zraw - mu, m_c)}, the query not clipped. Kept so a bundle scores as
 *       it did when it was measured.</li>
 * </ul>
 *
 * <p>Why a class of its own: everything that depends only on the bundle (the projection, the
 * shift {@code P origin} or {@code P origin + mu}, the class directions) is prepared once here,
 * and each rule's per-query arithmetic sits in one place, apart from the votes and the prior.
 */
final class Centroids {
    /** Counts below this are read as this ({@code runtime/centroids.py} MIN_COUNT). */
    static final double MIN_COUNT = 1.0;
    /** The L1 clip's floor on a norm, so a zero query divides by this rather than by 0 (Python's 1e-300). */
    private static final double CLIP_TINY = 1e-300;

    private final int classes;
    private final int k;
    private final int dim;
    private final double temperature;
    private final double clip;
    /** The projection {@code [k][dim]}. */
    private final double[] projection;
    /** {@code P origin + mu} under the cosine rule, {@code P origin} under the others; {@code [k]}. */
    private final double[] shift;
    /**
     * The class directions {@code [classes][k]}: the unit class sums under "cosine_public", the
     * unit centred means under "cosine", the centred means as released under "gaussian".
     */
    private final double[] directions;
    /** The Gaussian rule's overall mean {@code mu} {@code [k]} and {@code |m_c|^2 / 2} {@code [classes]}; null otherwise. */
    private final double[] mu;
    private final double[] halfNorms;

    /**
     * The centroids of a bundle's class statistics under the rule, temperature, clip and pull of
     * {@code weights}; {@code prior} is {@code prior.embeddings} {@code [classes][dim]} (or null)
     * and {@code sumsNoise} the sums' noise norm nu, both read only by the pull.
     */
    Centroids(Bundle.ClassStats cs, Scorer.Weights weights, int classes, float[] prior, double sumsNoise) {
        this.classes = classes;
        this.k = cs.k();
        this.dim = cs.dim();
        this.temperature = weights.centroidTemperature;
        this.clip = weights.centroidClipL1;
        float[] proj = cs.projectionRef();
        float[] origin = cs.originRef();
        this.projection = new double[proj.length];
        for (int i = 0; i < proj.length; i++) {
            projection[i] = proj[i];
        }
        // P (x - origin) = P x - P origin: one product per query.
        double[] pOrigin = project(origin, 0, null);
        if (Scorer.COSINE_PUBLIC.equals(weights.centroidRule)) {
            // cos(P x - P origin, S_c): the class sums' directions; counts and mu unused
            double[] sums = new double[classes * k];
            float[] released = cs.sumsRef();
            for (int i = 0; i < sums.length; i++) {
                sums[i] = released[i];
            }
            double pull = weights.descriptionPull * sumsNoise;
            if (prior != null && pull > 0) {
                double[] toward = new double[classes * k];
                for (int c = 0; c < classes; c++) {
                    System.arraycopy(project(prior, c * dim, pOrigin), 0, toward, c * k, k);
                }
                Scorer.unitRows(toward, classes, k);
                double m = Math.max(1.0, pull);
                for (int i = 0; i < sums.length; i++) {
                    sums[i] = sums[i] / m + (pull / m) * toward[i];
                }
            }
            Scorer.unitRows(sums, classes, k);
            this.shift = pOrigin;
            this.directions = sums;
            this.mu = null;
            this.halfNorms = null;
            return;
        }
        double[] overall = new double[k];
        double[] centred = centredMeans(cs.sumsRef(), cs.countsRef(), classes, k, overall);
        if (weights.gaussian()) {
            // The mean is subtracted after the clip, so it stays apart from the shift.
            this.shift = pOrigin;
            this.mu = overall;
            this.halfNorms = new double[classes];
            for (int c = 0; c < classes; c++) {
                double sq = 0;
                for (int j = 0; j < k; j++) {
                    double v = centred[c * k + j];
                    sq += v * v;
                }
                halfNorms[c] = 0.5 * sq;
            }
            this.directions = centred;
        } else {
            // z = P (x - origin) - mu = P x - (P origin + mu), unclipped
            for (int j = 0; j < k; j++) {
                pOrigin[j] += overall[j];
            }
            this.shift = pOrigin;
            this.mu = null;
            this.halfNorms = null;
            Scorer.unitRows(centred, classes, k);
            this.directions = centred;
        }
    }

    /**
     * {@code P v - minus} for the {@code dim} values of {@code v} from {@code offset} ({@code minus}
     * null: nothing subtracted), each coordinate summed in index order in double precision: the
     * one product the origin, the descriptions of the pull and every query go through.
     */
    private double[] project(float[] v, int offset, double[] minus) {
        double[] out = new double[k];
        for (int j = 0; j < k; j++) {
            double s = 0;
            for (int i = 0; i < dim; i++) {
                s += (double) v[offset + i] * projection[j * dim + i];
            }
            out[j] = minus == null ? s : s - minus[j];
        }
        return out;
    }

    /** softmax(centroid logits / tau_c) of an embedding of {@code dim} values (see the class doc). */
    double[] probs(float[] embedding) {
        double[] z = project(embedding, 0, shift);
        if (mu == null) {  // cosine, cosine_public: the directions are unit rows
            Scorer.unitRows(z, 1, k);
        } else {           // gaussian: clip as the exporter clipped the records, then centre
            clipL1(z, clip);
            for (int j = 0; j < k; j++) {
                z[j] -= mu[j];
            }
        }
        double[] logits = new double[classes];
        for (int c = 0; c < classes; c++) {
            double s = 0;
            for (int j = 0; j < k; j++) {
                s += z[j] * directions[c * k + j];
            }
            if (halfNorms != null) {
                s -= halfNorms[c];
            }
            logits[c] = s / temperature;
        }
        return Scorer.softmax(logits);
    }

    /**
     * Class means minus the overall mean, {@code [classes][k]}, with the overall mean written to
     * {@code mu}: {@code runtime/centroids.py}'s centred_means (counts floored at 1).
     */
    static double[] centredMeans(float[] sums, float[] counts, int classes, int k, double[] mu) {
        double total = 0;
        double[] floored = new double[classes];
        for (int c = 0; c < classes; c++) {
            floored[c] = Math.max((double) counts[c], MIN_COUNT);
            total += floored[c];
        }
        double denom = Math.max(total, MIN_COUNT);
        for (int j = 0; j < k; j++) {
            double s = 0;
            for (int c = 0; c < classes; c++) {
                s += sums[c * k + j];
            }
            mu[j] = s / denom;
        }
        double[] out = new double[classes * k];
        for (int c = 0; c < classes; c++) {
            for (int j = 0; j < k; j++) {
                out[c * k + j] = (double) sums[c * k + j] / floored[c] - mu[j];
            }
        }
        return out;
    }

    /**
     * A vector scaled down, in place, to L1 norm at most {@code bound}: multiplied by
     * {@code min(1, bound / max(L1, 1e-300))}, as {@code runtime/scoring.py}'s clip_l1 (the
     * exporter clips each record the same way before quantizing it, so the Gaussian rule puts
     * a query on the scale of the released sums).
     */
    static void clipL1(double[] z, double bound) {
        double l1 = 0;
        for (double v : z) {
            l1 += Math.abs(v);
        }
        double scale = Math.min(1.0, bound / Math.max(l1, CLIP_TINY));
        for (int j = 0; j < z.length; j++) {
            z[j] *= scale;
        }
    }
}
