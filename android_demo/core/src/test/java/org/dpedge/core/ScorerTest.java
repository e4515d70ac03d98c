package org.dpedge.core;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.util.Arrays;
import java.util.Map;

import org.junit.Test;

/** Algorithm 2: per-class vote sums over tables; argmax with ties to the lower index. */
public class ScorerTest {

    /** runtime/scoring.py's doctest: votes [[[1,0],[0,3]],[[2,2],[5,-1]]], buckets [1,0] give [2,5]. */
    @Test
    public void mirrorsThePythonDoctest() {
        short[] votes = {1, 0, 0, 3, 2, 2, 5, -1};  // 2 tables, 1 bit, 2 classes
        Scorer s = new Scorer(votes, 2, 1, 2);
        assertArrayEquals(new long[] {2, 5}, s.voteSums(new int[] {1, 0}));
        assertArrayEquals(new double[] {2, 5}, s.scores(new int[] {1, 0}), 0);
    }

    @Test
    public void tiesGoToTheLowerIndex() {
        assertEquals(0, Scorer.argmax(new double[] {3, 3, 1}));
        assertEquals(1, Scorer.argmax(new double[] {-5, 2, 2, 2}));
        assertEquals(2, Scorer.argmax(new long[] {-1, -1, 0, 0}));
        assertEquals(0, Scorer.argmax(new long[] {-7, -7}));
    }

    @Test
    public void predictionKeepsLabelOrderAndBreaksTiesLikePython() {
        Prediction p = new Prediction(Arrays.asList("a", "b", "c"), new double[] {1, 4, 4});
        assertEquals("b", p.label());
        assertEquals(1, p.labelIndex());
        assertEquals(Arrays.asList("a", "b", "c"), Arrays.asList(p.scores().keySet().toArray()));
        assertEquals("b", p.top(2).get(0).getKey());
        assertEquals("c", p.top(2).get(1).getKey());
        assertEquals(1, p.top(0).size());
    }

    @Test
    public void sumsExtremeInt16VotesWithoutOverflow() {
        int tables = 1024;
        short[] votes = new short[tables * 2 * 2];
        Arrays.fill(votes, Short.MIN_VALUE);
        for (int t = 0; t < tables; t++) {
            votes[t * 4 + 1] = Short.MAX_VALUE;
        }
        long[] sums = new Scorer(votes, tables, 1, 2).voteSums(new int[tables]);
        assertEquals(-32768L * tables, sums[0]);
        assertEquals(32767L * tables, sums[1]);
    }

    /** runtime/centroids.py's doctest: sums [[4, 0], [0, 2]], counts [2, 2]. */
    @Test
    public void centredMeansMirrorThePythonDoctest() {
        double[] mu = new double[2];
        double[] c = Centroids.centredMeans(new float[] {4, 0, 0, 2}, new float[] {2, 2}, 2, 2, mu);
        assertArrayEquals(new double[] {1.0, -0.5, -1.0, 0.5}, c, 0);
        assertArrayEquals(new double[] {1.0, 0.5}, mu, 0);
        // counts below 1 are read as 1, also in the overall mean's denominator
        c = Centroids.centredMeans(new float[] {4, 0, 0, 2}, new float[] {-3, 0.5f}, 2, 2, mu);
        assertArrayEquals(new double[] {2.0, 1.0}, mu, 0);
        assertArrayEquals(new double[] {2.0, -1.0, -2.0, 1.0}, c, 0);
    }

    private static Bundle format2(java.util.function.Consumer<Map<String, Object>> edit) throws Exception {
        Map<String, Object> p = TestBundles.payload2();
        edit.accept(p);
        // The top-level sensitivity and scale state the votes release's (the reader checks it).
        Object releases = TestBundles.sub(p, "privacy").get("releases");
        if (releases instanceof java.util.List) {
            for (Object r : (java.util.List<?>) releases) {
                if ("votes".equals(((Map<?, ?>) r).get("statistic"))) {
                    TestBundles.sub(p, "privacy").put("noise_scale", ((Map<?, ?>) r).get("noise_scale"));
                    TestBundles.sub(p, "privacy").put("sensitivity_l1", ((Map<?, ?>) r).get("sensitivity_l1"));
                }
            }
        }
        return BundleReader.read(TestBundles.seal2(p));
    }

    @Test
    public void blendIsTheSumOfItsComponents() throws Exception {
        Bundle b = format2(p -> { });
        Scorer blend = new Scorer(b);
        assertFalse(blend.plainVotes());
        float[] x = {0.6f, -0.8f, 0.1f};
        int[] buckets = new SimHasher(b).buckets(x);
        double[] votesOnly = new Scorer(format2(p -> {
            TestBundles.sub(p, "scoring").put("centroids", 0L);
            TestBundles.sub(p, "scoring").put("prior", 0L);
        })).scores(x, buckets);
        double[] c = new Scorer(b, Scorer.Mode.CENTROIDS).scores(x, buckets);
        double[] pr = new Scorer(b, Scorer.Mode.PRIOR).scores(x, buckets);
        double[] all = blend.scores(x, buckets);
        // the query's cells, negative noisy votes read as 0
        short[] votes = b.votes();
        double[] positive = new double[3];
        double total = 0;
        for (int t = 0; t < 2; t++) {
            for (int i = 0; i < 3; i++) {
                positive[i] += Math.max(0, votes[(t * 4 + buckets[t]) * 3 + i]);
            }
        }
        for (double v : positive) {
            total += v;
        }
        double probs = 0;
        double priorProbs = 0;
        for (int i = 0; i < 3; i++) {
            assertEquals(positive[i] / total, votesOnly[i], 1e-15);
            assertEquals(votesOnly[i] + c[i] + pr[i], all[i], 1e-15);  // epsilon 8: no prior boost
            probs += c[i];
            priorProbs += pr[i];
        }
        assertEquals(1.0, probs, 1e-15);
        assertEquals(1.0, priorProbs, 1e-15);
        assertEquals(1.0, blend.priorBoost(), 0);
        assertArrayEquals(new int[] {1, 1}, buckets);  // offsets 0.1, -0.2 (table 0) and 0, 0.3 (table 1)
        assertArrayEquals(new double[] {0, 1, 0}, votesOnly, 0);
    }

    @Test
    public void priorWeightGrowsBelowEpsilonOne() throws Exception {
        Bundle b = format2(p -> {
            TestBundles.sub(p, "privacy").put("epsilon", 0.25);
            TestBundles.sub(p, "privacy").put("releases", TestBundles.list(
                    release("class_stats", 0.2), release("votes", 0.05)));
        });
        assertEquals(4.0, new Scorer(b).priorBoost(), 0);
    }

    /** runtime/scoring.py's prior_boost doctest and tests/test_aligned.py's cases, by hand. */
    @Test
    public void priorBoostMirrorsPython() {
        assertEquals(2.0, Scorer.priorBoost(0.5, 0.0, null), 0);
        assertEquals(4.0, Scorer.priorBoost(1.0, 1000.0, new float[] {250f, 250f}), 0);
        assertEquals(10.0, Scorer.priorBoost(0.1, 0.0, new float[] {10f, 10f}), 1e-15);  // 2.0: 1/eps only
        assertEquals(2.0, Scorer.priorBoost(0.5, 1000.0, null), 0);  // no class statistics: no count term
        assertEquals(1.0, Scorer.priorBoost(1.0, 1000.0, new float[] {5000f, 5000f}), 0);  // plenty of data
        assertEquals(6.0, Scorer.priorBoost(1.0, 1000.0, new float[] {100f, 150f, 250f}), 1e-15);
        assertEquals(1000.0, Scorer.priorBoost(2.0, 1000.0, new float[] {-30f, 10f}), 1e-12);  // N floored at 1
        assertEquals(Scorer.SCORING_MAX, Scorer.priorBoost(1e-300, 1000.0, new float[] {1f}), 0);
    }

    /**
     * The bundle's prior_records_per_class (R) and noisy class counts (10 + 7 + 0.4 = 17.4 over 3
     * classes in the test bundle) raise the boost to R * 3 / (epsilon * 17.4) when that exceeds
     * max(1, 1/epsilon); without class statistics the count term is skipped.
     */
    @Test
    public void priorWeightGrowsWithFewNoisyRecordsPerClass() throws Exception {
        Scorer s = new Scorer(format2(p -> TestBundles.sub(p, "scoring").put("prior_records_per_class", 1000L)));
        assertEquals(1000.0, s.weights().priorRecordsPerClass, 0);
        double n = (double) 10f + (double) 7f + (double) 0.4f;
        assertEquals(1000.0 * 3 / (8.0 * n), s.priorBoost(), 0);
        // the same blend as without R, but for the prior's weight
        float[] e = {0.3f, -0.2f, 0.9f};
        int[] buckets = {1, 3};
        Scorer plain = new Scorer(format2(p -> { }));
        double[] boosted = s.scores(e, buckets);
        double[] unboosted = plain.scores(e, buckets);
        double[] pr = s.priorProbs(e);
        for (int i = 0; i < 3; i++) {
            assertEquals(unboosted[i] + (s.priorBoost() - 1.0) * pr[i], boosted[i], 1e-12);
        }
        assertEquals(1.0, plain.priorBoost(), 0);  // no R in the map: max(1, 1/8), the 2.0 boost
        assertEquals(1.0, new Scorer(format2(p -> TestBundles.sub(p, "scoring").put("prior_records_per_class", 0.1)))
                .priorBoost(), 0);  // R small: the count term is below 1
        assertEquals(1.0, new Scorer(format2(p -> {
            TestBundles.sub(p, "scoring").put("prior_records_per_class", 1000.0);
            p.remove("class_stats");
        })).priorBoost(), 0);  // no class statistics: no count term
    }

    private static Map<String, Object> release(String statistic, double epsilon) {
        Map<String, Object> r = new java.util.LinkedHashMap<>();
        r.put("statistic", statistic);
        r.put("epsilon", epsilon);
        r.put("mechanism", "m");
        r.put("sensitivity_l1", 2L);
        r.put("noise_scale", 2.0 / epsilon);
        return r;
    }

    @Test
    public void weightsComeFromTheScoringMap() throws Exception {
        Scorer.Weights w = new Scorer(format2(p -> {
            TestBundles.sub(p, "scoring").put("votes", 2L);
            TestBundles.sub(p, "scoring").put("prior_temperature", 0.5);
            TestBundles.sub(p, "scoring").remove("centroids");
        })).weights();
        assertEquals(2.0, w.votes, 0);
        assertEquals(1.0, w.centroids, 0);
        assertEquals(0.5, w.priorTemperature, 0);
        assertEquals(0.05, new Scorer(format2(p -> p.remove("scoring"))).weights().centroidTemperature, 0);
        assertEquals(Scorer.COSINE, w.centroidRule);  // no rule in the map: format 2.0's cosine
        assertEquals(0.0, w.centroidClipL1, 0);
        Scorer.Weights g = new Scorer(format2(p -> {
            TestBundles.sub(p, "scoring").put("centroid_rule", "gaussian");
            TestBundles.sub(p, "scoring").put("centroid_clip_l1", 5.0);
            TestBundles.sub(p, "scoring").put("centroid_temperature", 0.003);
        })).weights();
        assertEquals(Scorer.GAUSSIAN, g.centroidRule);
        assertEquals(5.0, g.centroidClipL1, 0);
        assertEquals(0.003, g.centroidTemperature, 0);
    }

    @Test
    public void withoutCentroidsOrPriorTheScoresAreTheVoteSums() throws Exception {
        Bundle b = format2(p -> {
            p.remove("class_stats");
            p.remove("prior");
        });
        Scorer s = new Scorer(b);
        assertTrue(s.plainVotes());
        assertArrayEquals(new double[] {-3, -1, -32769}, s.scores(new float[] {0.2f, 0.2f, 0.2f}, new int[] {1, 3}), 0);
        try {
            new Scorer(b, Scorer.Mode.CENTROIDS);
            fail("centroids mode without class statistics");
        } catch (IllegalArgumentException e) {
            assertEquals("this bundle has no class statistics to score with centroids", e.getMessage());
        }
    }

    @Test(expected = IllegalStateException.class)
    public void bucketOnlyScoresRefuseABlend() throws Exception {
        new Scorer(format2(p -> { })).scores(new int[] {0, 0});
    }

    /** The reader refuses a string weight first (BundleReaderTest); a map it did not check is refused here. */
    @Test
    public void aStringWeightIsRefused() {
        Map<String, Object> m = new java.util.LinkedHashMap<>();
        m.put("votes", "0.5");
        try {
            Scorer.Weights.fromMap(m);
            fail("a string weight");
        } catch (IllegalArgumentException e) {
            assertEquals("the bundle's scoring weight 'votes' is string, expected a number", e.getMessage());
        }
    }

    @Test
    public void weightsRefuseAnUnknownRuleAndAGaussianRuleWithoutAClip() {
        Map<String, Object> m = new java.util.LinkedHashMap<>();
        m.put("centroid_rule", "median");
        expectIllegal(m, "unknown centroid_rule 'median' (one of cosine, gaussian, cosine_public)");
        m.put("centroid_rule", "gaussian");
        expectIllegal(m, "the gaussian centroid rule needs a positive centroid_clip_l1, got 0.0");
        m.put("centroid_clip_l1", Double.POSITIVE_INFINITY);
        expectIllegal(m, "the gaussian centroid rule needs a positive centroid_clip_l1, got inf");
        m.put("centroid_clip_l1", 5L);
        Scorer.Weights w = Scorer.Weights.fromMap(m);
        assertTrue(w.gaussian());
        assertEquals(5.0, w.centroidClipL1, 0);
        m.put("centroid_rule", "cosine");
        m.put("centroid_clip_l1", 0L);
        assertFalse(Scorer.Weights.fromMap(m).gaussian());  // the cosine rule needs no clip
    }

    private static void expectIllegal(Map<String, Object> m, String message) {
        try {
            Scorer.Weights.fromMap(m);
            fail("accepted " + m);
        } catch (IllegalArgumentException e) {
            assertEquals(message, e.getMessage());
        }
    }

    /** runtime/scoring.py's clip_l1 doctest: [3, -4] to L1 1 is [3/7, -4/7]; [0.1, 0.2] is inside. */
    @Test
    public void clipL1MirrorsThePythonDoctest() {
        double[] z = {3.0, -4.0};
        Centroids.clipL1(z, 1.0);
        assertArrayEquals(new double[] {3.0 / 7, -4.0 / 7}, z, 1e-15);
        z = new double[] {0.1, 0.2};
        Centroids.clipL1(z, 1.0);
        assertArrayEquals(new double[] {0.1, 0.2}, z, 0);
        z = new double[] {0.0, 0.0};  // L1 0: divided by 1e-300, not by 0
        Centroids.clipL1(z, 1.0);
        assertArrayEquals(new double[] {0.0, 0.0}, z, 0);
    }

    /**
     * The Gaussian rule by hand on the test bundle: x = (0.6, -0.8, 0.1), projection the x and y
     * axes, origin (0.05, 0, -0.05), so P x - P origin = (0.55, -0.8), L1 1.35, clipped to L1 1;
     * then minus mu, and logits {@code <z, m_c> - |m_c|^2 / 2} over the temperature.
     */
    @Test
    public void gaussianCentroidsOnAHandExample() throws Exception {
        Bundle b = format2(p -> {
            TestBundles.sub(p, "scoring").put("centroid_rule", "gaussian");
            TestBundles.sub(p, "scoring").put("centroid_clip_l1", 1L);
            TestBundles.sub(p, "scoring").put("centroid_temperature", 0.003);
        });
        Scorer s = new Scorer(b, Scorer.Mode.CENTROIDS);
        assertTrue(s.weights().gaussian());
        float[] x = {0.6f, -0.8f, 0.1f};
        // counts 10, 7, 0.4 (floored to 1): total 18
        double[] mu = {(8.0 - 2.0 + 0.5) / 18, (1.0 + 6.0 - 4.0) / 18};
        double[][] means = {{8.0 / 10 - mu[0], 1.0 / 10 - mu[1]}, {-2.0 / 7 - mu[0], 6.0 / 7 - mu[1]},
            {0.5 - mu[0], -4.0 - mu[1]}};
        double px = (double) 0.6f - (double) 0.05f;
        double py = (double) -0.8f;
        double l1 = Math.abs(px) + Math.abs(py);
        double[] z = {px / l1 - mu[0], py / l1 - mu[1]};
        double[] logits = new double[3];
        double max = Double.NEGATIVE_INFINITY;
        for (int c = 0; c < 3; c++) {
            logits[c] = (z[0] * means[c][0] + z[1] * means[c][1]
                    - 0.5 * (means[c][0] * means[c][0] + means[c][1] * means[c][1])) / 0.003;
            max = Math.max(max, logits[c]);
        }
        double sum = 0;
        double[] expected = new double[3];
        for (int c = 0; c < 3; c++) {
            expected[c] = Math.exp(logits[c] - max);
            sum += expected[c];
        }
        for (int c = 0; c < 3; c++) {
            expected[c] /= sum;
        }
        assertArrayEquals(expected, s.centroidProbs(x), 1e-12);
        // A clip large enough to leave the query alone gives other scores than the clip of 1.
        double[] unclipped = new Scorer(format2(p -> {
            TestBundles.sub(p, "scoring").put("centroid_rule", "gaussian");
            TestBundles.sub(p, "scoring").put("centroid_clip_l1", 1e6);
            TestBundles.sub(p, "scoring").put("centroid_temperature", 0.003);
        }), Scorer.Mode.CENTROIDS).centroidProbs(x);
        assertFalse(Arrays.equals(expected, unclipped));
    }

    /** A bundle that names no rule (format 2.0) keeps the cosine rule, whatever clip it gives. */
    @Test
    public void withoutARuleTheCentroidsAreCosine() throws Exception {
        float[] x = {0.6f, -0.8f, 0.1f};
        double[] plain = new Scorer(format2(p -> { }), Scorer.Mode.CENTROIDS).centroidProbs(x);
        double[] withClip = new Scorer(format2(p -> TestBundles.sub(p, "scoring").put("centroid_clip_l1", 1L)),
                Scorer.Mode.CENTROIDS).centroidProbs(x);
        double[] named = new Scorer(format2(p -> TestBundles.sub(p, "scoring").put("centroid_rule", "cosine")),
                Scorer.Mode.CENTROIDS).centroidProbs(x);
        assertArrayEquals(plain, withClip, 0);
        assertArrayEquals(plain, named, 0);
        // cos(z, m_c) / 0.05 by hand, z = P x - (P origin + mu)
        double[] mu = {6.5 / 18, 3.0 / 18};
        double[][] means = {{0.8 - mu[0], 0.1 - mu[1]}, {-2.0 / 7 - mu[0], 6.0 / 7 - mu[1]}, {0.5 - mu[0], -4.0 - mu[1]}};
        double[] z = {(double) 0.6f - (double) 0.05f - mu[0], (double) -0.8f - mu[1]};
        double zn = Math.hypot(z[0], z[1]);
        double[] e = new double[3];
        double sum = 0;
        for (int c = 0; c < 3; c++) {
            double cos = (z[0] * means[c][0] + z[1] * means[c][1]) / (zn * Math.hypot(means[c][0], means[c][1]));
            e[c] = Math.exp(cos / 0.05);
            sum += e[c];
        }
        for (int c = 0; c < 3; c++) {
            e[c] /= sum;
        }
        assertArrayEquals(e, plain, 1e-12);
    }

    /** Every release made under a person bound of k: its sensitivity and noise scale k times one record's. */
    @SuppressWarnings("unchecked")
    private static void perPerson(Map<String, Object> p, long k) {
        Map<String, Object> privacy = TestBundles.sub(p, "privacy");
        privacy.put("max_records_per_unit", k);
        for (Object o : (java.util.List<?>) privacy.get("releases")) {
            Map<String, Object> r = (Map<String, Object>) o;
            r.put("sensitivity_l1", k * (Long) r.get("sensitivity_l1"));
            r.put("noise_scale", k * ((Number) r.get("noise_scale")).doubleValue());
        }
        privacy.put("sensitivity_l1", k * (Long) privacy.get("sensitivity_l1"));
        privacy.put("noise_scale", k * ((Number) privacy.get("noise_scale")).doubleValue());
    }

    private static Bundle format3(java.util.function.Consumer<Map<String, Object>> edit) throws Exception {
        Map<String, Object> p = TestBundles.payload3();
        edit.accept(p);
        return BundleReader.read(TestBundles.seal3(p));
    }

    /** softmax(v / t) by the plain formula. */
    private static double[] softmax(double[] v, double t) {
        double max = Double.NEGATIVE_INFINITY;
        for (double x : v) {
            max = Math.max(max, x / t);
        }
        double[] e = new double[v.length];
        double sum = 0;
        for (int i = 0; i < v.length; i++) {
            e[i] = Math.exp(v[i] / t - max);
            sum += e[i];
        }
        for (int i = 0; i < v.length; i++) {
            e[i] /= sum;
        }
        return e;
    }

    /**
     * Format 3.0's "cosine_public" rule by hand on the test bundle: z = P x - P origin =
     * (0.6 - 0.05, -0.8), the class sums (8, 1), (-2, 6), (0.5, -4) (counts unused), logits
     * cos(z, S_c) / 0.04.
     */
    @Test
    public void cosinePublicCentroidsOnAHandExample() throws Exception {
        Scorer s = new Scorer(format3(p -> { }), Scorer.Mode.CENTROIDS);
        assertEquals(Scorer.COSINE_PUBLIC, s.weights().centroidRule);
        float[] x = {0.6f, -0.8f, 0.1f};
        double[] z = {(double) 0.6f - (double) 0.05f, (double) -0.8f};
        double[][] sums = {{8, 1}, {-2, 6}, {0.5, -4}};
        double[] cos = new double[3];
        for (int c = 0; c < 3; c++) {
            cos[c] = (z[0] * sums[c][0] + z[1] * sums[c][1]) / (Math.hypot(z[0], z[1]) * Math.hypot(sums[c][0], sums[c][1]));
        }
        assertArrayEquals(softmax(cos, 0.04), s.centroidProbs(x), 1e-12);
        // the counts do not enter: other counts, the same probabilities
        Scorer other = new Scorer(format3(p -> TestBundles.sub(p, "class_stats").put("counts",
                TestBundles.array("<f4", TestBundles.floats(1f, 500f, -3f), 3))), Scorer.Mode.CENTROIDS);
        assertArrayEquals(s.centroidProbs(x), other.centroidProbs(x), 0);
        // a zero class sum has cosine 0 with every query, and so has the query at the origin
        Scorer zero = new Scorer(format3(p -> TestBundles.sub(p, "class_stats").put("sums",
                TestBundles.array("<f4", TestBundles.floats(8f, 1f, 0f, 0f, 0.5f, -4f), 3, 2))), Scorer.Mode.CENTROIDS);
        cos[1] = 0;
        assertArrayEquals(softmax(cos, 0.04), zero.centroidProbs(x), 1e-12);
        assertArrayEquals(new double[] {1.0 / 3, 1.0 / 3, 1.0 / 3}, s.centroidProbs(new float[] {0.05f, 0f, 0.7f}),
                1e-15);
    }

    /** runtime/scoring.py's prior_boost doctest for the linear rule, and its cap, floor and K. */
    @Test
    public void linearPriorBoostMirrorsPython() {
        assertEquals(0.4, Scorer.priorBoost(1.0, 100.0, new float[] {250f, 250f}, Scorer.LINEAR, 1.0), 0);
        assertEquals(100.0 * 2 * 3 / 500.0, Scorer.priorBoost(1.0, 100.0, new float[] {250f, 250f}, Scorer.LINEAR, 3.0),
                0);
        assertEquals(100.0 * 3 / 0.5, Scorer.priorBoost(0.5, 100.0, new float[] {-4f, 0.5f, 2f}, Scorer.LINEAR, 1.0),
                0);  // N = -1.5 is read as 1
        assertEquals(Scorer.SCORING_MAX, Scorer.priorBoost(0.01, 1e6, new float[] {0f, 0f}, Scorer.LINEAR, 1.0), 0);
        assertEquals(0.0, Scorer.priorBoost(8.0, 0.0, new float[] {5f, 5f}, Scorer.LINEAR, 1.0), 0);  // no floor of 1
        // "max" is format 2's rule, whatever K
        assertEquals(4.0, Scorer.priorBoost(1.0, 1000.0, new float[] {250f, 250f}, Scorer.MAX, 3.0), 0);
        try {
            Scorer.priorBoost(1.0, 100.0, null, Scorer.LINEAR, 1.0);
            fail("linear without counts");
        } catch (IllegalArgumentException e) {
            assertEquals("the linear prior boost needs the released class counts", e.getMessage());
        }
        try {
            Scorer.priorBoost(1.0, 100.0, null, "square", 1.0);
            fail("an unknown rule");
        } catch (IllegalArgumentException e) {
            assertEquals("unknown prior_boost_rule 'square' (one of max, linear)", e.getMessage());
        }
    }

    /** The bundle's R (100), classes (3), epsilon (8), N (17.4) and records per person give the boost. */
    @Test
    public void aFormat3BundlesBoostFollowsItsRule() throws Exception {
        double n = (double) 10f + (double) 7f + (double) 0.4f;
        assertEquals(100.0 * 3 / (8.0 * n), new Scorer(format3(p -> { })).priorBoost(), 0);
        assertEquals(100.0 * 3 * 4 / (8.0 * n), new Scorer(format3(p -> perPerson(p, 4))).priorBoost(), 0);
        assertEquals(100.0 * 3 / (8.0 * n), new Scorer(format3(p ->
                TestBundles.sub(p, "privacy").remove("max_records_per_unit"))).priorBoost(), 0);  // K = 1
        // "max" (named, or no rule in the map): max(1, 1/epsilon, R * classes / (epsilon * N))
        assertEquals(Math.max(1.0, 100.0 * 3 / (8.0 * n)), new Scorer(format3(p ->
                TestBundles.sub(p, "scoring").put("prior_boost_rule", "max"))).priorBoost(), 0);
        assertEquals(Math.max(1.0, 100.0 * 3 / (8.0 * n)), new Scorer(format3(p ->
                TestBundles.sub(p, "scoring").remove("prior_boost_rule"))).priorBoost(), 0);
        assertEquals(Scorer.MAX, Scorer.Weights.fromMap(null).priorBoostRule);
    }

    /** Without vote tables the blend is the centroids and the boosted prior; nothing is hashed. */
    @Test
    public void aBundleWithoutVoteTablesBlendsCentroidsAndPrior() throws Exception {
        Bundle b = format3(p -> TestBundles.sub(p, "scoring").put("prior", 0.5));
        Scorer s = new Scorer(b);
        assertFalse(s.plainVotes());
        assertFalse(s.hasVotes());
        float[] x = {0.3f, -0.2f, 0.9f};
        double[] c = s.centroidProbs(x);
        double[] pr = s.priorProbs(x);
        double[] blend = s.scores(x);
        for (int i = 0; i < 3; i++) {
            assertEquals(c[i] + 0.5 * s.priorBoost() * pr[i], blend[i], 1e-15);
        }
        assertArrayEquals(blend, s.scores(x, null), 0);
        assertArrayEquals(c, new Scorer(b, Scorer.Mode.CENTROIDS).scores(x), 0);
        assertArrayEquals(pr, new Scorer(b, Scorer.Mode.PRIOR).scores(x), 0);
        try {
            new Scorer(b, Scorer.Mode.VOTES);
            fail("votes mode without vote tables");
        } catch (IllegalArgumentException e) {
            assertEquals("this bundle has no vote tables to score with votes", e.getMessage());
        }
        try {
            s.scores(new int[0]);
            fail("bucket scores without vote tables");
        } catch (IllegalStateException e) {
            assertEquals("this bundle has no vote tables: use scores(embedding)", e.getMessage());
        }
        // no prior: the centroids alone
        Scorer noPrior = new Scorer(format3(p -> p.remove("prior")));
        assertArrayEquals(noPrior.centroidProbs(x), noPrior.scores(x), 0);
    }

    /** With vote tables (--votes-share) the votes' share is added to format 3's blend. */
    @Test
    public void aFormat3BundleWithVoteTablesAddsTheVotes() throws Exception {
        Bundle b = BundleReader.read(TestBundles.seal3(TestBundles.payload3Tables()));
        Scorer s = new Scorer(b);
        assertTrue(s.hasVotes());
        float[] x = {0.6f, -0.8f, 0.1f};
        int[] buckets = new SimHasher(b).buckets(x);
        assertArrayEquals(new int[] {1, 1}, buckets);
        double[] c = s.centroidProbs(x);
        double[] pr = s.priorProbs(x);
        double[] all = s.scores(x, buckets);
        double[] share = {0, 1, 0};  // the positive votes of buckets [1, 1] (blendIsTheSumOfItsComponents)
        for (int i = 0; i < 3; i++) {
            assertEquals(c[i] + s.priorBoost() * pr[i] + share[i], all[i], 1e-15);
        }
        try {
            s.scores(x);
            fail("a bundle with tables needs buckets");
        } catch (IllegalStateException e) {
            assertEquals("this bundle has vote tables: use scores(embedding, buckets)", e.getMessage());
        }
        assertArrayEquals(new double[] {-3, -1, -32769}, new Scorer(b, Scorer.Mode.VOTES).scores(x, new int[] {1, 3}), 0);
    }

    @Test
    public void weightsReadTheBoostRule() {
        Map<String, Object> m = new java.util.LinkedHashMap<>();
        m.put("prior_boost_rule", "linear");
        m.put("centroid_rule", "cosine_public");
        Scorer.Weights w = Scorer.Weights.fromMap(m);
        assertEquals(Scorer.LINEAR, w.priorBoostRule);
        assertEquals(Scorer.COSINE_PUBLIC, w.centroidRule);
        m.put("prior_boost_rule", "quadratic");
        m.put("centroid_rule", "median");
        expectIllegal(m, "unknown prior_boost_rule 'quadratic' (one of max, linear)");  // the map's order, as Python
        m.put("prior_boost_rule", 1L);
        expectIllegal(m, "unknown prior_boost_rule 1 (one of max, linear)");
    }

    @Test
    public void argmaxTreatsNaNAsNumpyDoes() {
        assertEquals(1, Scorer.argmax(new double[] {1, Double.NaN, 5, Double.NaN}));
    }

    @Test(expected = IllegalArgumentException.class)
    public void refusesABucketOutOfRange() {
        new Scorer(new short[] {1, 0, 0, 3}, 1, 1, 2).voteSums(new int[] {2});
    }
}
