package org.dpedge.core;

import java.math.BigInteger;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;

/**
 * Scores from the released statistics, as {@code runtime/scoring.py}: class centroids, table
 * votes and the public label-description prior.
 *
 * <p>Why separate from hashing: scoring reads only what the bundle released (noisy class
 * statistics, noisy vote tables) and public inputs, so it is post-processing and costs no
 * privacy budget however often it runs; keeping it apart from the encoder and hasher lets
 * tests check it on small data alone.
 *
 * <p>A bundle with vote tables and neither class statistics nor a prior (every format-1
 * bundle) is scored by the paper's Algorithm 2: {@code score[c] = sum over t of
 * votes[t][bucket_t][c]}, summed in a long (no overflow for any valid bundle). Otherwise
 * (formats 2 and 3) the score is the blend
 *
 * <pre>
 *   w_centroids * softmax(centroid logits / tau_c)
 *   + w_prior * boost * softmax(cos(x, prior rows) / tau_p)
 *   + w_votes * pos / sum(pos)                            (only with vote tables)
 * </pre>
 *
 * where {@code pos[c]} sums the query's cells with negative noisy votes read as 0, and the
 * weights are {@link Weights}' defaults overridden by the bundle's {@code scoring} map. A
 * component whose field is absent is left out; a format-3 bundle without vote tables has no
 * votes term (and no buckets: its {@link Classifier} does not hash). The centroid logits follow
 * the map's {@code centroid_rule} ({@link Centroids}): "cosine_public" (format 3.0, what the
 * exporter writes) is the cosine between the query and the noisy class sum in the public
 * frame; "gaussian" (format 2.1) the nearest class mean of the clipped query; "cosine" (format
 * 2.0 and the default) the cosine to the centred class mean.
 *
 * The prior's {@code boost} follows the map's {@code prior_boost_rule}
 * ({@link #priorBoost(double, double, float[], String, double)}): "linear" (format 3.0)
 * {@code R * classes * K / (epsilon * N)}, "max" (format 2, the default)
 * {@code max(1, 1/epsilon, R * classes / (epsilon * N))}, both at most {@link #SCORING_MAX}, with
 * N the released noisy record count (at least 1), R the map's {@code prior_records_per_class}
 * and K the bundle's records per person: a small or very private release leans on the public
 * prior.
 *
 * <p>Everything is computed in double from the stored float32 values, by the plain formulas
 * above in plain loops; the Python runtime folds the temperatures and the class directions into
 * one matrix product (BLAS), which is the same arithmetic up to rounding, so scores agree to
 * about 1e-12 (the Gaussian logits are divided by a temperature of 0.003, which magnifies a
 * rounding difference in them about 300 times in the softmax, still far inside 1e-9). The
 * one place the two differ visibly is a query whose {@code zraw} is (nearly) the zero vector,
 * a query equal to the origin: here its cosines are 0, where Python's folded product leaves
 * rounding noise divided by its 1e-12 floor. The label is the argmax, ties going to the lower
 * class index, as numpy's argmax does.
 */
public final class Scorer {
    /** What {@link #scores} returns: the blend, or one component alone (Python's MODES). */
    public enum Mode { BLEND, VOTES, CENTROIDS, PRIOR }

    private static final double TINY = 1e-12;

    /** The centroid rule of a format-2.0 bundle (no {@code centroid_rule} in its scoring map). */
    public static final String COSINE = "cosine";
    /** The centroid rule of format 2.1: clipped query, nearest class mean (see the class doc). */
    public static final String GAUSSIAN = "gaussian";
    /** The centroid rule of format 3.0: cosine to the class sums in the public-centred frame. */
    public static final String COSINE_PUBLIC = "cosine_public";
    /** The centroid rules a bundle may name, in Python's order ({@code runtime/bundle/schema.py} CENTROID_RULES). */
    public static final List<String> CENTROID_RULES = Collections.unmodifiableList(Arrays.asList(COSINE, GAUSSIAN,
            COSINE_PUBLIC));
    /** The prior boost rule of format 2 (and of a map that names none): see {@link #priorBoost(double, double, float[])}. */
    public static final String MAX = "max";
    /** The prior boost rule of format 3.0: {@code R * classes * K / (epsilon * N)}, at most {@link #SCORING_MAX}. */
    public static final String LINEAR = "linear";
    /** The prior boost rules a bundle may name, in Python's order ({@code runtime/bundle/schema.py} PRIOR_BOOST_RULES). */
    public static final List<String> PRIOR_BOOST_RULES = Collections.unmodifiableList(Arrays.asList(MAX, LINEAR));
    /**
     * The {@code scoring} names that hold numbers, in the order the reader checks them
     * ({@code runtime/scoring.py} SCORING_NUMBERS).
     */
    public static final List<String> SCORING_NUMBERS = Collections.unmodifiableList(Arrays.asList(
            "votes", "centroids", "prior", "centroid_temperature", "prior_temperature", "centroid_clip_l1",
            "prior_records_per_class", "description_pull"));
    /**
     * The largest value a {@link #SCORING_NUMBERS} entry may hold, and the cap on the prior's
     * boost ({@code runtime/scoring.py} SCORING_MAX). Why: far above anything measured, and
     * with weights and boost at most this (and temperatures at least {@link #TEMPERATURE_MIN})
     * no blend of probabilities can overflow a double, so every score stays finite.
     */
    public static final double SCORING_MAX = 1e6;
    /**
     * The smallest temperature a bundle may name ({@code runtime/scoring.py} TEMPERATURE_MIN):
     * a logit divided by less could overflow to infinity (and a softmax of infinities is NaN).
     */
    public static final double TEMPERATURE_MIN = 1e-6;

    private final short[] votes;
    private final int tables;
    private final int buckets;
    private final int classes;
    private final Mode mode;
    private final Weights weights;
    private final double priorBoost;
    /** Unit rows of the prior, {@code [classes][dim]}, or null. */
    private final double[] prior;
    /** The centroid component, or null without class statistics. */
    private final Centroids centroids;
    private final int dim;

    /**
     * Algorithm 2 alone, over vote tables.
     *
     * @param votes int16 {@code [tables][2^bits][classes]} flattened in C order (not copied)
     */
    public Scorer(short[] votes, int tables, int bits, int classes) {
        if (tables < 1 || bits < 1 || bits > 30 || classes < 1
                || votes.length != ((long) tables << bits) * classes) {
            throw new IllegalArgumentException("votes must hold tables x 2^bits x classes = " + tables + " x 2^" + bits
                    + " x " + classes + " values, got " + votes.length);
        }
        this.votes = votes;
        this.tables = tables;
        this.buckets = 1 << bits;
        this.classes = classes;
        this.mode = Mode.VOTES;
        this.weights = new Weights();
        this.priorBoost = 1.0;
        this.prior = null;
        this.centroids = null;
        this.dim = 0;
    }

    /**
     * The scorer of a bundle: the blend when it has class statistics or a prior, else Algorithm 2
     * over its vote tables.
     */
    public Scorer(Bundle bundle) {
        this(bundle, Mode.BLEND);
    }

    /**
     * The scorer of a bundle in the given mode.
     *
     * @throws IllegalArgumentException if the mode needs a field the bundle lacks (as Python's
     *     ValueError), or the bundle's scoring map is one {@link Weights#fromMap} refuses (the
     *     reader refuses those first, so only for a map it did not check)
     */
    public Scorer(Bundle bundle, Mode mode) {
        this.votes = bundle.votesRef();
        this.tables = bundle.tables();
        this.buckets = votes == null ? 0 : 1 << bundle.bits();
        this.classes = bundle.labels().size();
        if (mode == null) {
            throw new NullPointerException("mode");
        }
        Bundle.ClassStats cs = bundle.classStats();
        if (mode == Mode.VOTES && votes == null) {
            throw new IllegalArgumentException("this bundle has no vote tables to score with votes");
        }
        if (mode == Mode.CENTROIDS && cs == null) {
            throw new IllegalArgumentException("this bundle has no class statistics to score with centroids");
        }
        if (mode == Mode.PRIOR && bundle.priorRef() == null) {
            throw new IllegalArgumentException("this bundle has no label descriptions to score with a prior");
        }
        this.mode = mode;
        this.weights = Weights.fromMap(bundle.scoring());
        Object perUnit = bundle.privacy().get("max_records_per_unit");  // absent before format 1.2
        this.priorBoost = priorBoost(bundle.epsilon(), weights.priorRecordsPerClass,
                cs == null ? null : cs.countsRef(), weights.priorBoostRule,
                perUnit == null ? 1.0 : Fields.toDouble(perUnit));
        this.dim = bundle.dim();
        float[] p = bundle.priorRef();
        if (p == null) {
            this.prior = null;
        } else {
            double[] rows = new double[p.length];
            for (int i = 0; i < p.length; i++) {
                rows[i] = p[i];
            }
            unitRows(rows, classes, dim);
            this.prior = rows;
        }
        this.centroids = cs == null ? null
                : new Centroids(cs, weights, classes, p, sumsNoiseNorm(bundle.privacy(), cs.k()));
    }

    /**
     * nu, the root-mean-square norm of the noise on one row of k noisy class sums, in the
     * stored units ({@code runtime/scoring.py} sums_noise_norm): {@code sqrt(2 k) * noise_scale
     * / grid} of the first {@code class_sums} release, a grid that is not an integer from 1 to
     * 2^31 read as 1; 0 without such a release (formats 1 and 2). Why: a Laplace coordinate of
     * scale t has variance 2 t^2, and the pull of format 4.0 is measured in this norm.
     */
    static double sumsNoiseNorm(Map<String, Object> privacy, int k) {
        Object releases = privacy.get("releases");
        if (!(releases instanceof List)) {
            return 0.0;
        }
        for (Object r : (List<?>) releases) {
            if (r instanceof Map && PrivacyFacts.CLASS_SUMS.equals(((Map<?, ?>) r).get("statistic"))) {
                long grid = PrivacyFacts.statedGrid(((Map<?, ?>) r).get("grid"));
                return Math.sqrt(2.0 * k) * Fields.toDouble(((Map<?, ?>) r).get("noise_scale")) / (grid == 0 ? 1 : grid);
            }
        }
        return 0.0;
    }

    /**
     * How much the prior's weight grows under the "max" rule (format 2, and a scoring map that
     * names no rule), as {@code runtime/scoring.py}'s prior_boost: {@code max(1, 1/epsilon)}; then, when {@code recordsPerClass} (R, the scoring map's
     * {@code prior_records_per_class}) is not 0 and the bundle has class statistics,
     * {@code max(that, R * classes / (epsilon * max(N, 1)))}, N the sum of the released noisy
     * class counts (float32 read as double) and classes their number; at most
     * {@link #SCORING_MAX}.
     *
     * <p>Why: the released statistics carry about {@code epsilon * N / classes} records' worth
     * of signal per class; below about R of it they are mostly noise, and a blend that trusts
     * them does worse than the public prior alone. So a release that is small (few records per
     * class) or very private (small epsilon) leans on the public prior. Without class
     * statistics (or with R = 0, what a format-2.0 bundle means) the count term is skipped and
     * the boost is {@code max(1, 1/epsilon)}, as before. The cap keeps the blend finite.
     *
     * <p>The comparisons are written as Python's {@code max} and {@code min} evaluate them
     * (the first argument kept unless the other is strictly larger or smaller). N is summed in
     * index order; numpy sums pairwise from 8 values on, which can differ in the last bits
     * only, far inside the golden tolerance.
     *
     * @param counts the released class counts, or null without class statistics
     */
    public static double priorBoost(double epsilon, double recordsPerClass, float[] counts) {
        return priorBoost(epsilon, recordsPerClass, counts, MAX, 1.0);
    }

    /**
     * How much the prior's weight grows, by the named rule ({@code runtime/scoring.py}'s
     * prior_boost): "max" as {@link #priorBoost(double, double, float[])} ({@code recordsPerUnit}
     * unused); "linear" (format 3.0) {@code R * classes * K / (epsilon * max(N, 1))}, at most
     * {@link #SCORING_MAX}, with R {@code recordsPerClass}, classes the number of counts, K
     * {@code recordsPerUnit} (the bundle's {@code privacy.max_records_per_unit}, 1 without it)
     * and N the sum of the released noisy class counts.
     *
     * <p>Why linear: the released statistics carry about {@code epsilon * N / (classes * K)}
     * records' worth of signal per class, and the prior's weight falls as that grows, without
     * the floor of 1 that kept the prior at full weight on a large release (docs/accuracy.md
     * measures both). The arithmetic is Python's, in its order: {@code ((R * classes) * K) /
     * (epsilon * N)}.
     *
     * @param counts the released class counts; the linear rule needs them
     * @throws IllegalArgumentException for an unknown rule, or the linear rule without counts
     */
    public static double priorBoost(double epsilon, double recordsPerClass, float[] counts, String rule,
                                    double recordsPerUnit) {
        if (LINEAR.equals(rule)) {
            if (counts == null) {
                throw new IllegalArgumentException("the linear prior boost needs the released class counts");
            }
            double total = 0;
            for (float c : counts) {
                total += c;
            }
            double n = 1.0 > total ? 1.0 : total;
            double term = recordsPerClass * counts.length * recordsPerUnit / (epsilon * n);
            return SCORING_MAX < term ? SCORING_MAX : term;
        }
        if (!MAX.equals(rule)) {
            throw new IllegalArgumentException("unknown prior_boost_rule " + Msgpack.repr(rule) + " (one of "
                    + String.join(", ", PRIOR_BOOST_RULES) + ")");
        }
        double boost = 1.0 / epsilon > 1.0 ? 1.0 / epsilon : 1.0;
        if (recordsPerClass != 0 && counts != null) {  // NaN is "true" in Python too
            double total = 0;
            for (float c : counts) {
                total += c;
            }
            double n = 1.0 > total ? 1.0 : total;
            double term = recordsPerClass * counts.length / (epsilon * n);
            if (term > boost) {
                boost = term;
            }
        }
        return SCORING_MAX < boost ? SCORING_MAX : boost;
    }

    /** Per-class sums of the noisy votes in the given bucket of each table. */
    public long[] voteSums(int[] bucketIds) {
        if (votes == null) {
            throw new IllegalStateException("this bundle has no vote tables");
        }
        checkBuckets(bucketIds);
        long[] sums = new long[classes];
        for (int t = 0; t < tables; t++) {
            int base = (t * buckets + bucketIds[t]) * classes;
            for (int c = 0; c < classes; c++) {
                sums[c] += votes[base + c];
            }
        }
        return sums;
    }

    /**
     * Algorithm 2's scores, {@link #voteSums} as doubles (the type the Python runtime reports
     * scores in).
     *
     * @throws IllegalStateException if this scorer blends (see {@link #plainVotes()}): the blend
     *     needs the embedding, so call {@link #scores(float[], int[])}
     */
    public double[] scores(int[] bucketIds) {
        if (votes == null) {
            throw new IllegalStateException("this bundle has no vote tables: use scores(embedding)");
        }
        if (!plainVotes()) {
            throw new IllegalStateException("this bundle's scores blend votes with centroids or a prior: "
                    + "use scores(embedding, buckets)");
        }
        return toDoubles(voteSums(bucketIds));
    }

    /**
     * Per-class scores of an embedding whose buckets are {@code bucketIds} (from the bundle's
     * {@link SimHasher}), as the Python runtime's {@code Scorer.scores}. Without vote tables
     * (format 3) the buckets are not read and may be null: see {@link #scores(float[])}.
     */
    public double[] scores(float[] embedding, int[] bucketIds) {
        if (mode == Mode.CENTROIDS) {
            return centroidProbs(embedding);
        }
        if (mode == Mode.PRIOR) {
            return priorProbs(embedding);
        }
        if (plainVotes()) {
            return toDoubles(voteSums(bucketIds));
        }
        if (votes != null) {
            checkBuckets(bucketIds);
        }
        // Python's order: centroids + boosted prior, then the votes' share added.
        double[] out = new double[classes];
        if (centroids != null) {
            double[] cp = centroidProbs(embedding);
            for (int c = 0; c < classes; c++) {
                out[c] = weights.centroids * cp[c];
            }
        }
        if (prior != null) {
            double[] pp = priorProbs(embedding);
            double w = weights.prior * priorBoost;
            for (int c = 0; c < classes; c++) {
                out[c] += w * pp[c];
            }
        }
        if (votes != null) {
            double[] positive = new double[classes];
            for (int t = 0; t < tables; t++) {
                int base = (t * buckets + bucketIds[t]) * classes;
                for (int c = 0; c < classes; c++) {
                    positive[c] += Math.max(votes[base + c], 0);
                }
            }
            double total = 0;
            for (double v : positive) {
                total += v;
            }
            double denom = Math.max(total, TINY);
            for (int c = 0; c < classes; c++) {
                out[c] += weights.votes * positive[c] / denom;
            }
        }
        return out;
    }

    /**
     * Per-class scores of an embedding of a bundle without vote tables (format 3's default),
     * which needs no buckets.
     *
     * @throws IllegalStateException if the bundle has vote tables: call
     *     {@link #scores(float[], int[])} with the embedding's buckets
     */
    public double[] scores(float[] embedding) {
        if (votes != null && mode != Mode.CENTROIDS && mode != Mode.PRIOR) {
            throw new IllegalStateException("this bundle has vote tables: use scores(embedding, buckets)");
        }
        return scores(embedding, null);
    }

    /** Whether the scorer reads vote tables (every bundle before format 3; optional from it). */
    public boolean hasVotes() {
        return votes != null;
    }

    /**
     * softmax(centroid logits / tau_c), the logits by the bundle's centroid rule (see the class
     * doc): {@code <clip(z), m_c> - |m_c|^2 / 2} under "gaussian", {@code cos(z, m_c)} under
     * "cosine", {@code cos(z, S_c)} under "cosine_public"; needs class statistics.
     */
    public double[] centroidProbs(float[] embedding) {
        if (centroids == null) {
            throw new IllegalStateException("this bundle has no class statistics");
        }
        checkDim(embedding);
        return centroids.probs(embedding);
    }

    /** softmax(cos(x, label descriptions) / tau_p); needs a prior. */
    public double[] priorProbs(float[] embedding) {
        if (prior == null) {
            throw new IllegalStateException("this bundle has no label descriptions");
        }
        checkDim(embedding);
        double[] x = new double[dim];
        for (int i = 0; i < dim; i++) {
            x[i] = embedding[i];
        }
        unitRows(x, 1, dim);
        double[] logits = new double[classes];
        for (int c = 0; c < classes; c++) {
            double s = 0;
            for (int i = 0; i < dim; i++) {
                s += x[i] * prior[c * dim + i];
            }
            logits[c] = s / weights.priorTemperature;
        }
        return softmax(logits);
    }

    /**
     * True when the scores are Algorithm 2's summed votes: a bundle with vote tables and no
     * centroids or prior to blend, or the votes mode.
     */
    public boolean plainVotes() {
        return votes != null && (mode == Mode.VOTES || mode == Mode.BLEND && centroids == null && prior == null);
    }

    public Mode mode() {
        return mode;
    }

    /** The blend's weights in use (defaults overridden by the bundle's scoring map). */
    public Weights weights() {
        return weights;
    }

    /**
     * The prior's extra weight ({@link #priorBoost(double, double, float[], String, double)}):
     * under "max" at least 1, larger at small epsilon or few noisy records per class; under
     * "linear" proportional to the classes over the released noisy records; 1 for a scorer of
     * vote tables alone built from arrays.
     */
    public double priorBoost() {
        return priorBoost;
    }

    /**
     * The index of the largest score; ties go to the lower index. A NaN counts as the largest
     * (the first NaN wins), as in numpy's argmax.
     */
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

    /** The index of the largest sum; ties go to the lower index. */
    public static int argmax(long[] sums) {
        int best = 0;
        for (int c = 1; c < sums.length; c++) {
            if (sums[c] > sums[best]) {
                best = c;
            }
        }
        return best;
    }

    public int classes() {
        return classes;
    }

    // ------------------------------------------------------------------ helpers

    private void checkBuckets(int[] bucketIds) {
        if (bucketIds.length != tables) {
            throw new IllegalArgumentException("need one bucket per table (" + tables + "), got " + bucketIds.length);
        }
        for (int t = 0; t < tables; t++) {
            int b = bucketIds[t];
            if (b < 0 || b >= buckets) {
                throw new IllegalArgumentException("bucket " + b + " of table " + t + " is outside [0, " + buckets
                        + ")");
            }
        }
    }

    private void checkDim(float[] embedding) {
        if (embedding.length != dim) {
            throw new IllegalArgumentException("embedding has " + embedding.length + " values, expected " + dim);
        }
    }

    private static double[] toDoubles(long[] sums) {
        double[] out = new double[sums.length];
        for (int c = 0; c < sums.length; c++) {
            out[c] = sums[c];
        }
        return out;
    }

    /** Each row divided by max(its L2 norm, 1e-12), in place. */
    static void unitRows(double[] a, int rows, int cols) {
        for (int r = 0; r < rows; r++) {
            double sq = 0;
            for (int i = 0; i < cols; i++) {
                double v = a[r * cols + i];
                sq += v * v;
            }
            double norm = Math.max(Math.sqrt(sq), TINY);
            for (int i = 0; i < cols; i++) {
                a[r * cols + i] /= norm;
            }
        }
    }

    /** exp(z - max z), normalized to sum 1 (numpy's max propagates NaN; so does this). */
    static double[] softmax(double[] z) {
        double max = Double.NEGATIVE_INFINITY;
        for (double v : z) {
            max = Double.isNaN(v) || Double.isNaN(max) ? Double.NaN : Math.max(max, v);
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

    /**
     * The blend's weights, temperatures and rules ({@code runtime/scoring.py} Weights): the
     * defaults, overridden by the values the bundle's {@code scoring} map gives for these names
     * (other entries, such as the "rule" text, are ignored). The defaults are what a format-2.0
     * bundle means: weights 1, temperatures 0.05, the cosine rule, no clip, no count term, the
     * "max" boost. A format-2.1 bundle names the Gaussian rule with its clip and a centroid
     * temperature of 0.003 (its logits are squared distances in embedding units, far smaller
     * than a cosine's range of 2) and {@code prior_records_per_class} (1000 as shipped). A
     * format-3.0 bundle names "cosine_public" at a centroid temperature of 0.04 and the "linear"
     * boost with {@code prior_records_per_class} 100; a format-4.0 bundle adds
     * {@code description_pull} 0.5.
     */
    public static final class Weights {
        public final double votes;
        public final double centroids;
        public final double prior;
        public final double centroidTemperature;
        public final double priorTemperature;
        /** {@link #COSINE}, {@link #GAUSSIAN} or {@link #COSINE_PUBLIC}. */
        public final String centroidRule;
        /** The Gaussian rule's L1 clip of the projected query (0, unused, under the cosine rules). */
        public final double centroidClipL1;
        /**
         * R in the prior's boost: the count term {@code R * classes / (epsilon * N)} of "max" (0:
         * no count term, the boost is {@code max(1, 1/epsilon)}), the numerator of "linear".
         */
        public final double priorRecordsPerClass;
        /** {@link #MAX} or {@link #LINEAR}. */
        public final String priorBoostRule;
        /**
         * a, how far "cosine_public" pulls each class sum toward its description, in noise norms
         * ({@link Centroids}); 0 (no pull) before format 4.0.
         */
        public final double descriptionPull;

        /** The defaults: weights 1, temperatures 0.05, the cosine rule (a format-2.0 bundle). */
        public Weights() {
            this(1.0, 1.0, 1.0, 0.05, 0.05);
        }

        /** These weights and temperatures with the cosine rule. */
        public Weights(double votes, double centroids, double prior, double centroidTemperature,
                       double priorTemperature) {
            this(votes, centroids, prior, centroidTemperature, priorTemperature, COSINE, 0.0);
        }

        /** These weights, temperatures, rule and clip, without the prior's count term (R = 0). */
        public Weights(double votes, double centroids, double prior, double centroidTemperature,
                       double priorTemperature, String centroidRule, double centroidClipL1) {
            this(votes, centroids, prior, centroidTemperature, priorTemperature, centroidRule, centroidClipL1, 0.0);
        }

        /** These weights, temperatures, rule, clip and R, with the "max" boost. */
        public Weights(double votes, double centroids, double prior, double centroidTemperature,
                       double priorTemperature, String centroidRule, double centroidClipL1,
                       double priorRecordsPerClass) {
            this(votes, centroids, prior, centroidTemperature, priorTemperature, centroidRule, centroidClipL1,
                    priorRecordsPerClass, MAX);
        }

        /** These weights, temperatures, rules, clip and R, without the pull (a format-3.0 map). */
        public Weights(double votes, double centroids, double prior, double centroidTemperature,
                       double priorTemperature, String centroidRule, double centroidClipL1,
                       double priorRecordsPerClass, String priorBoostRule) {
            this(votes, centroids, prior, centroidTemperature, priorTemperature, centroidRule, centroidClipL1,
                    priorRecordsPerClass, priorBoostRule, 0.0);
        }

        /**
         * @throws IllegalArgumentException if the rule is not one of {@link #CENTROID_RULES}, the
         *     boost rule not one of {@link #PRIOR_BOOST_RULES}, or the rule is Gaussian and the
         *     clip is not a positive finite number (Python's ValueError: the clip is what puts
         *     the query on the means' scale)
         */
        public Weights(double votes, double centroids, double prior, double centroidTemperature,
                       double priorTemperature, String centroidRule, double centroidClipL1,
                       double priorRecordsPerClass, String priorBoostRule, double descriptionPull) {
            if (!CENTROID_RULES.contains(centroidRule)) {
                throw new IllegalArgumentException(unknown("centroid_rule", centroidRule, CENTROID_RULES));
            }
            if (!PRIOR_BOOST_RULES.contains(priorBoostRule)) {
                throw new IllegalArgumentException(unknown("prior_boost_rule", priorBoostRule, PRIOR_BOOST_RULES));
            }
            if (GAUSSIAN.equals(centroidRule) && !(centroidClipL1 > 0 && !Double.isInfinite(centroidClipL1))) {
                throw new IllegalArgumentException("the gaussian centroid rule needs a positive centroid_clip_l1, got "
                        + Msgpack.pyFloat(centroidClipL1));
            }
            this.votes = votes;
            this.centroids = centroids;
            this.prior = prior;
            this.centroidTemperature = centroidTemperature;
            this.priorTemperature = priorTemperature;
            this.centroidRule = centroidRule;
            this.centroidClipL1 = centroidClipL1;
            this.priorRecordsPerClass = priorRecordsPerClass;
            this.priorBoostRule = priorBoostRule;
            this.descriptionPull = descriptionPull;
        }

        /** Whether the centroid logits follow the Gaussian rule (else a cosine rule). */
        public boolean gaussian() {
            return GAUSSIAN.equals(centroidRule);
        }

        /**
         * The defaults overridden by a bundle's scoring map (null: the defaults).
         *
         * @throws IllegalArgumentException if a known number name maps to something other than
         *     a number, a rule is unknown or not a string (the first in the map's order, as in
         *     Python), or the Gaussian rule comes without a positive clip (the reader refuses all
         *     of these first, with Python's messages; this is for a map it did not check)
         */
        public static Weights fromMap(Map<String, Object> m) {
            if (m == null) {
                return new Weights();
            }
            for (Map.Entry<String, Object> e : m.entrySet()) {
                List<String> rules = "centroid_rule".equals(e.getKey()) ? CENTROID_RULES
                        : "prior_boost_rule".equals(e.getKey()) ? PRIOR_BOOST_RULES : null;
                if (rules != null && !rules.contains(e.getValue())) {
                    throw new IllegalArgumentException(unknown(e.getKey(), e.getValue(), rules));
                }
            }
            return new Weights(number(m, "votes", 1.0), number(m, "centroids", 1.0), number(m, "prior", 1.0),
                    number(m, "centroid_temperature", 0.05), number(m, "prior_temperature", 0.05),
                    rule(m, "centroid_rule", COSINE), number(m, "centroid_clip_l1", 0.0),
                    number(m, "prior_records_per_class", 0.0), rule(m, "prior_boost_rule", MAX),
                    number(m, "description_pull", 0.0));
        }

        private static String unknown(String name, Object value, List<String> rules) {
            return "unknown " + name + " " + Msgpack.repr(value) + " (one of " + String.join(", ", rules) + ")";
        }

        private static String rule(Map<String, Object> m, String key, String fallback) {
            return m.containsKey(key) ? (String) m.get(key) : fallback;
        }

        private static double number(Map<String, Object> m, String key, double fallback) {
            if (!m.containsKey(key)) {
                return fallback;
            }
            Object v = m.get(key);
            if (v instanceof Long || v instanceof Double || v instanceof BigInteger) {
                return Fields.toDouble(v);
            }
            throw new IllegalArgumentException("the bundle's scoring weight '" + key + "' is "
                    + Msgpack.typeName(v) + ", expected a number");
        }

        @Override
        public String toString() {
            return "Weights{votes=" + votes + ", centroids=" + centroids + ", prior=" + prior
                    + ", centroid_temperature=" + centroidTemperature + ", prior_temperature=" + priorTemperature
                    + ", centroid_rule=" + centroidRule + ", centroid_clip_l1=" + centroidClipL1
                    + ", prior_records_per_class=" + priorRecordsPerClass + ", prior_boost_rule=" + priorBoostRule
                    + ", description_pull=" + descriptionPull + "}";
        }
    }
}
