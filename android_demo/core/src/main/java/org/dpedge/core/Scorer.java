package org.dpedge.core;

/**
 * Scores from the released statistics: the one scoring rule of {@code runtime/scoring.py}
 * ({@code docs/bundle-format.md} section 7). Everything here reads only what the bundle released
 * and its public inputs, so it is post-processing: any number of queries costs no privacy.
 *
 * <p>For a query's embedding x, in double precision from the stored float32 values:
 * <ul>
 *   <li>vote tables without class statistics (the paper's Algorithm 2): v_c = the sum over
 *       tables of {@code votes[t][bucket_t][c]}, score_c = {@code max(v_c, 0)} over the sum of
 *       those (uniform when every v_c is at most 0);</li>
 *   <li>otherwise the blend {@code [softmax(centroid) + boost softmax(prior) + pos / sum(pos)] / W}:
 *       with P the projection, o the origin, S_c the class sums over the grid, e_c the prior's
 *       rows, z = P x - P o; the sums are first pulled toward their descriptions,
 *       {@code S_c / m + (s / m) unit(P e_c - P o)} with {@code s = description_pull x nu},
 *       {@code nu = sqrt(2k) x noise_scale / grid} the noise's root-mean-square norm on one row
 *       and {@code m = max(1, s)}; centroid_c = {@code z . unit(S_c) / |z| / tau_c} (0 when |z| <= 1e-6);
 *       prior_c = {@code x . unit(e_c) / |x| / tau_p} (0 when |x| <= 1e-6); boost =
 *       {@code min(R C K / (epsilon N), 1e6)}, N the released record count (at least 1); pos_c
 *       the query's votes with negative cells read as 0 (uniform when they are all 0);
 *       {@code W = 1 + boost + [1 with vote tables]}. The prior terms (boost, pull) only with
 *       a prior, the votes term only with vote tables.</li>
 * </ul>
 * Either way the scores are a distribution over the labels: non-negative, summing to 1.
 * The label is the argmax, ties to the lower class index. Python folds the projection, the
 * directions and the temperatures into one matrix product; the plain loops here are the same
 * arithmetic in another order, so scores agree to about 1e-14.
 */
public final class Scorer {
    private static final double TINY = 1e-12;
    /** |z| or |x| at most this: the cosine is rounding noise, and every reader scores it as 0. */
    private static final double NEAR_ZERO = 1e-6;
    static final double BOOST_MAX = 1e6;

    private final int classes;
    private final int dim;
    private final int k;
    private final SimHasher hasher;
    private final short[] votes;
    private final int buckets;
    private final boolean plainVotes;
    private final double boost;
    /** P [k][D], P o [k], and the pulled class directions over tau_c [C][k]; null without class statistics. */
    private final double[] projection;
    private final double[] shift;
    private final double[] directions;
    /** The prior's unit rows over tau_p [C][D], or null. */
    private final double[] prior;

    public Scorer(Bundle b) {
        classes = b.labels.size();
        dim = b.dim();
        k = b.k;
        votes = b.votes;
        hasher = votes == null ? null : new SimHasher(b.hyperplanes, b.offsets, b.tables, b.bits, dim);
        buckets = votes == null ? 0 : 1 << b.bits;
        plainVotes = votes != null && b.classSums == null;
        if (b.classSums == null) {
            boost = 0;
            projection = shift = directions = prior = null;
            return;
        }
        Bundle.Scoring s = b.scoring;
        boolean hasPrior = b.prior != null;
        boost = hasPrior ? priorBoost(s.priorRecordsPerClass, classes, b.recordsPerUnit(), b.epsilon(), b.classCounts) : 0;
        projection = toDoubles(b.projection);
        shift = project(b.origin, 0, null);
        PrivacyFacts sums = b.releases.get(PrivacyFacts.CLASS_SUMS);
        double[] rows = new double[classes * k];
        for (int i = 0; i < rows.length; i++) {
            rows[i] = b.classSums[i] / (double) sums.grid();
        }
        double strength = s.descriptionPull * Math.sqrt(2.0 * k) * sums.noiseScale() / sums.grid();
        if (hasPrior && strength > 0) {
            double m = Math.max(1.0, strength);
            double[] toward = new double[classes * k];
            for (int c = 0; c < classes; c++) {
                System.arraycopy(project(b.prior, c * dim, shift), 0, toward, c * k, k);
            }
            unitRows(toward, classes, k);
            for (int i = 0; i < rows.length; i++) {
                rows[i] = rows[i] / m + strength / m * toward[i];
            }
        }
        unitRows(rows, classes, k);
        for (int i = 0; i < rows.length; i++) {
            rows[i] /= s.centroidTemperature;
        }
        directions = rows;
        if (hasPrior) {
            prior = toDoubles(b.prior);
            unitRows(prior, classes, dim);
            for (int i = 0; i < prior.length; i++) {
                prior[i] /= s.priorTemperature;
            }
        } else {
            prior = null;
        }
    }

    /** {@code min(R C K / (epsilon N), 1e6)}, N the released counts' sum (at least 1), in Python's order. */
    static double priorBoost(double recordsPerClass, int classes, long recordsPerUnit, double epsilon, int[] counts) {
        double total = 0;
        for (int c : counts) {
            total += c;
        }
        double n = Math.max(total, 1.0);
        return Math.min(recordsPerClass * classes * recordsPerUnit / (epsilon * n), BOOST_MAX);
    }

    /** Per-class scores of one embedding of {@code dim} values; the label is their {@link #argmax}. */
    public double[] scores(float[] x) {
        if (x.length != dim) {
            throw new IllegalArgumentException("embedding has " + x.length + " values, expected " + dim);
        }
        int[] bucket = hasher == null ? null : hasher.buckets(x);
        if (plainVotes) {
            long[] sums = voteSums(bucket, false);
            for (int c = 0; c < classes; c++) {
                sums[c] = Math.max(sums[c], 0);
            }
            return shares(sums);
        }
        double[] z = project(x, 0, shift);
        double zNorm = norm(z, 0, k);
        double[] logits = new double[classes];
        for (int c = 0; c < classes; c++) {  // a query at the origin has no direction: uniform
            logits[c] = zNorm > NEAR_ZERO ? dot(z, 0, directions, c * k, k) / zNorm : 0.0;
        }
        double[] out = softmax(logits);
        if (prior != null) {
            double[] xd = toDoubles(x);
            double xNorm = norm(xd, 0, dim);
            for (int c = 0; c < classes; c++) {
                logits[c] = xNorm > NEAR_ZERO ? dot(xd, 0, prior, c * dim, dim) / xNorm : 0.0;
            }
            double[] p = softmax(logits);
            for (int c = 0; c < classes; c++) {
                out[c] += boost * p[c];
            }
        }
        double weight = 1.0 + boost;
        if (votes != null) {
            double[] q = shares(voteSums(bucket, true));
            for (int c = 0; c < classes; c++) {
                out[c] += q[c];
            }
            weight += 1.0;
        }
        for (int c = 0; c < classes; c++) {
            out[c] /= weight;
        }
        return out;
    }

    /** Non-negative vote sums over their total; all zeros is uniform (no votes say nothing). */
    private double[] shares(long[] pos) {
        double total = 0;
        for (long v : pos) {
            total += v;
        }
        double[] out = new double[pos.length];
        for (int c = 0; c < pos.length; c++) {
            out[c] = total > 0 ? pos[c] / total : 1.0 / pos.length;
        }
        return out;
    }

    /** Per-class sums of the votes in each table's bucket (negative cells as 0 when {@code positive}). */
    private long[] voteSums(int[] bucket, boolean positive) {
        long[] sums = new long[classes];
        for (int t = 0; t < bucket.length; t++) {
            int base = (t * buckets + bucket[t]) * classes;
            for (int c = 0; c < classes; c++) {
                sums[c] += positive ? Math.max(votes[base + c], 0) : votes[base + c];
            }
        }
        return sums;
    }

    /** Whether the scores are Algorithm 2's vote sums (vote tables without class statistics). */
    public boolean plainVotes() {
        return plainVotes;
    }

    /** The prior's weight in the blend (0 without a prior). */
    public double priorBoost() {
        return boost;
    }

    /** The bundle's hasher, or null without vote tables. */
    public SimHasher hasher() {
        return hasher;
    }

    /** The index of the largest score, ties to the lower index (a NaN wins, as numpy's argmax). */
    public static int argmax(double[] scores) {
        int best = 0;
        for (int c = 0; c < scores.length; c++) {
            if (Double.isNaN(scores[c])) {
                return c;
            }
            if (scores[c] > scores[best]) {
                best = c;
            }
        }
        return best;
    }

    // ------------------------------------------------------------------ arithmetic

    /** {@code P v - minus} for the {@code dim} values of {@code v} from {@code offset}, summed in index order. */
    private double[] project(float[] v, int offset, double[] minus) {
        double[] out = new double[k];
        for (int j = 0; j < k; j++) {
            double s = 0;
            for (int i = 0; i < dim; i++) {
                s += v[offset + i] * projection[j * dim + i];
            }
            out[j] = minus == null ? s : s - minus[j];
        }
        return out;
    }

    private static double dot(double[] a, int ai, double[] b, int bi, int n) {
        double s = 0;
        for (int i = 0; i < n; i++) {
            s += a[ai + i] * b[bi + i];
        }
        return s;
    }

    private static double norm(double[] a, int from, int n) {
        return Math.sqrt(dot(a, from, a, from, n));
    }

    /** Each row divided by max(its L2 norm, 1e-12), in place. */
    static void unitRows(double[] a, int rows, int cols) {
        for (int r = 0; r < rows; r++) {
            double n = Math.max(norm(a, r * cols, cols), TINY);
            for (int i = 0; i < cols; i++) {
                a[r * cols + i] /= n;
            }
        }
    }

    /** exp(z - max z), normalized to sum 1. */
    static double[] softmax(double[] z) {
        double max = Double.NEGATIVE_INFINITY;
        for (double v : z) {
            max = Math.max(max, v);
        }
        double[] e = new double[z.length];
        double sum = 0;
        for (int i = 0; i < z.length; i++) {
            e[i] = Math.exp(z[i] - max);
            sum += e[i];
        }
        for (int i = 0; i < z.length; i++) {
            e[i] /= sum;
        }
        return e;
    }

    private static double[] toDoubles(float[] a) {
        double[] out = new double[a.length];
        for (int i = 0; i < a.length; i++) {
            out[i] = a[i];
        }
        return out;
    }
}
