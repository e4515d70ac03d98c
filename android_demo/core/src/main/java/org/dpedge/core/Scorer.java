package org.dpedge.core;

/**
 * Scores from the released statistics, docs/bundle-format.md section 7 (runtime/scoring.py):
 * a bundle with a head (1.1) by the head alone, softmax(W (x - origin) + b); vote tables without
 * class statistics by Algorithm 2 (each table's SimHash bucket, the votes' positive shares);
 * otherwise the blend of the centroids' softmax (the class sums pulled toward their
 * descriptions), the prior's softmax times its boost and, with vote tables, the votes' shares,
 * over their total weight. The scores are a distribution over the labels; the label is
 * the argmax, ties to the lower index. In float64 from the stored float32 values, every dot
 * product summed in ascending index order, as every reader sums. Post-processing: any number of
 * queries costs no privacy.
 */
public final class Scorer {
    private static final double TINY = Contract.number("scoring.unit_min_norm");
    private static final double NEAR_ZERO = Contract.number("scoring.near_zero");
    private static final double BOOST_MAX = Contract.number("scoring.boost_max");

    private final int classes;
    private final int dim;
    private final int k;
    private final Bundle b;
    private final boolean plainVotes;
    /** A head (1.1): it scores alone; false otherwise. */
    private final boolean head;
    private final double boost;
    /** P [k][D], P o [k], the pulled class directions over tau_c [C][k]; null without class statistics. */
    private final double[] projection;
    private final double[] shift;
    private final double[] directions;
    /** The prior's unit rows over tau_p [C][D], or null. */
    private final double[] prior;

    public Scorer(Bundle b) {
        this.b = b;
        classes = b.labels.size();
        dim = b.dim();
        k = b.k;
        plainVotes = b.votes != null && b.classSums == null;
        head = b.headWeights != null;
        if (b.classSums == null) {
            boost = 0;
            projection = shift = directions = prior = null;
            return;
        }
        double pull = (Double) b.scoring.get("description_pull");
        if (b.prior != null) {  // R C K / (epsilon N), N the released count (at least 1)
            double total = 0;
            for (int c : b.classCounts) {
                total += c;
            }
            double rc = (Double) b.scoring.get("prior_records_per_class") * classes * b.recordsPerUnit();
            boost = Math.min(rc / (b.epsilon() * Math.max(total, 1.0)), BOOST_MAX);
        } else {
            boost = 0;
        }
        projection = doubles(b.projection);
        shift = project(b.origin, 0, null);
        PrivacyFacts sums = b.releases.get("class_sums");
        double[] rows = new double[classes * k];
        for (int i = 0; i < rows.length; i++) {
            rows[i] = b.classSums[i] / (double) sums.grid();
        }
        // a nu: a sum of B batches' releases carries B discrete Laplace noises of variance about 2 t^2 each
        double strength = pull * (Math.sqrt(2.0 * k * b.batches()) * sums.noiseScale() / sums.grid());
        if (b.prior != null && strength > 0) {
            double m = Math.max(1.0, strength);
            double[] toward = new double[classes * k];
            for (int c = 0; c < classes; c++) {
                System.arraycopy(project(b.prior, c * dim, shift), 0, toward, c * k, k);
            }
            unitRows(toward, classes, k, 1);
            for (int i = 0; i < rows.length; i++) {
                rows[i] = rows[i] / m + strength / m * toward[i];
            }
        }
        directions = unitRows(rows, classes, k, (Double) b.scoring.get("centroid_temperature"));
        prior = b.prior == null ? null
                : unitRows(doubles(b.prior), classes, dim, (Double) b.scoring.get("prior_temperature"));
    }

    /** Per-class scores of one embedding of D values; the label is their {@link #argmax}. */
    public double[] scores(float[] x) {
        if (x.length != dim) {
            throw new IllegalArgumentException("an embedding of " + x.length + " values, expected " + dim);
        }
        if (head) {
            return head(x);
        }
        if (plainVotes) {
            return shares(votes(x, false));
        }
        double[] z = project(x, 0, shift);
        double zNorm = Math.sqrt(dot(z, 0, z, 0, k));
        double[] logits = new double[classes];
        for (int c = 0; c < classes; c++) {  // a query at the origin has no direction: uniform
            logits[c] = zNorm > NEAR_ZERO ? dot(z, 0, directions, c * k, k) / zNorm : 0.0;
        }
        double[] out = softmax(logits);
        double weight = 1.0 + boost;
        if (prior != null) {
            double[] xd = doubles(x);
            double xNorm = Math.sqrt(dot(xd, 0, xd, 0, dim));
            for (int c = 0; c < classes; c++) {
                logits[c] = xNorm > NEAR_ZERO ? dot(xd, 0, prior, c * dim, dim) / xNorm : 0.0;
            }
            double[] p = softmax(logits);
            for (int c = 0; c < classes; c++) {
                out[c] += boost * p[c];
            }
        }
        if (b.votes != null) {
            double[] q = shares(votes(x, true));
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

    /**
     * Per-class sums of the votes in the query's bucket of each table, negative sums (plain) or
     * cells (in the blend) read as 0. SimHash: bit h of table t is 1 iff hyperplane (t, h) . x is
     * above its offset (0 without offsets); the bucket is sum_h bit_h 2^h.
     */
    private long[] votes(float[] x, boolean positiveCells) {
        long[] sums = new long[classes];
        for (int t = 0, plane = 0; t < b.tables; t++) {
            int bucket = 0;
            for (int h = 0; h < b.bits; h++, plane++) {
                double d = 0;
                for (int i = 0; i < dim; i++) {
                    d += (double) x[i] * b.hyperplanes[plane * dim + i];
                }
                if (d > (b.offsets == null ? 0.0 : b.offsets[plane])) {
                    bucket |= 1 << h;
                }
            }
            int base = ((t << b.bits) + bucket) * classes;
            for (int c = 0; c < classes; c++) {
                sums[c] += positiveCells ? Math.max(b.votes[base + c], 0) : b.votes[base + c];
            }
        }
        for (int c = 0; c < classes; c++) {
            sums[c] = Math.max(sums[c], 0);
        }
        return sums;
    }

    /**
     * The head's scores: logit_c = sum over d in index order of (x_d - origin_d) W[c][d], plus
     * b[c], in float64 from the stored float32 values; their softmax, the largest subtracted
     * before exp (finite at every bound of the contract).
     */
    private double[] head(float[] x) {
        double[] logits = new double[classes];
        for (int c = 0; c < classes; c++) {
            double s = 0;
            for (int d = 0; d < dim; d++) {
                s += ((double) x[d] - (double) b.headOrigin[d]) * (double) b.headWeights[c * dim + d];
            }
            logits[c] = s + (double) b.headBias[c];
        }
        return softmax(logits);
    }

    /** Non-negative sums over their total; all zeros is uniform (no votes say nothing). */
    private static double[] shares(long[] pos) {
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

    /** Whether the scores are Algorithm 2's (vote tables without class statistics). */
    public boolean plainVotes() {
        return plainVotes;
    }

    /** The index of the largest score, ties to the lower index. */
    public static int argmax(double[] scores) {
        int best = 0;
        for (int c = 1; c < scores.length; c++) {
            if (scores[c] > scores[best]) {
                best = c;
            }
        }
        return best;
    }

    /** {@code P v - minus} for the D values of {@code v} from {@code offset}. */
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

    /** Each row over max(its norm, unit_min_norm) and over {@code temperature}, in place. */
    private static double[] unitRows(double[] a, int rows, int cols, double temperature) {
        for (int r = 0; r < rows; r++) {
            double n = Math.max(Math.sqrt(dot(a, r * cols, a, r * cols, cols)), TINY);
            for (int i = 0; i < cols; i++) {
                a[r * cols + i] = a[r * cols + i] / n / temperature;
            }
        }
        return a;
    }

    private static double[] softmax(double[] z) {
        double max = Double.NEGATIVE_INFINITY;
        for (double v : z) {
            max = Math.max(max, v);
        }
        double[] e = new double[z.length];
        double sum = 0;
        for (int i = 0; i < z.length; i++) {
            e[i] = ExactMath.exp(z[i] - max);  // section 7.1: the same bits in every reader
            sum += e[i];
        }
        for (int i = 0; i < z.length; i++) {
            e[i] /= sum;
        }
        return e;
    }

    private static double[] doubles(float[] a) {
        double[] out = new double[a.length];
        for (int i = 0; i < a.length; i++) {
            out[i] = a[i];
        }
        return out;
    }
}
