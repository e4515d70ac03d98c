package org.dpedge.core;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

import java.util.Map;

import org.junit.Test;

/**
 * The one scoring rule on the synthetic bundle (TestBundles). The expected numbers are the Python
 * scorer's (runtime/scoring.py on the same file); the golden data checks the rule on real bundles
 * and on one derived bundle per branch.
 */
public class ScorerTest {
    private static final float[][] X = {{0.6f, -0.8f, 0.1f}, {0, 0, 0}, {1, 0, 0}, {-0.2f, 0.5f, 0.84f}};

    /** The blend: centroids after the pull (m = 1 here), the prior boosted by 100 x 3 x 1 / (8 x 10), the votes' share. */
    @Test
    public void theBlendIsPythons() throws Exception {
        Scorer s = new Scorer(TestBundles.read(TestBundles.document()));
        assertFalse(s.plainVotes());
        assertEquals(3.75, s.priorBoost(), 0);
        double[][] python = {
            {4.749806430703202, 0.33333333333631343, 0.6668602359604844},
            {1.65, 1.8500000038410418, 2.2499999961589583},
            {4.999999984533895, 0.5000000077367786, 0.25000000772932607},
            {1.0000000033135292, 1.0041099273790062, 3.7458900693074644},
        };
        // The blend's three parts over W = 1 + boost + 1: a distribution.
        for (int i = 0; i < X.length; i++) {
            double[] want = new double[python[i].length];
            for (int c = 0; c < want.length; c++) {
                want[c] = python[i][c] / 5.75;
            }
            assertArrayEquals(want, s.scores(X[i]), 1e-12);
        }
    }

    /**
     * Vote tables alone: Algorithm 2. votes[t][u][c] = ((t x 4 + u) x 3 + c) % 7 - 3; for x =
     * (0.6, -0.8, 0.1) both tables give bucket 1: [0, 1, 2] + [-2, -1, 0] = [-2, 0, 2], whose
     * positive part over its total is [0, 0, 1]; sums that are all at most 0 give 1/3 each.
     */
    @Test
    public void voteTablesAloneAreSummed() throws Exception {
        Map<String, Object> doc = TestBundles.document();
        for (String path : new String[] {"releases.class_counts", "releases.class_sums", "subspace", "prior", "scoring"}) {
            TestBundles.drop(doc, path);
        }
        TestBundles.put(doc, "privacy.epsilon", 1.0);
        Scorer s = new Scorer(TestBundles.read(doc));
        assertTrue(s.plainVotes());
        assertEquals(0, s.priorBoost(), 0);
        double third = 1.0 / 3;
        double[][] python = {{0, 0, 1}, {0, 1, 0}, {2.0 / 6, 4.0 / 6, 0}, {third, third, third}};
        for (int i = 0; i < X.length; i++) {
            assertArrayEquals(python[i], s.scores(X[i]), 0);
        }
    }

    @Test
    public void theBoostIsCappedAndCountsBelowOneCountAsOne() {
        assertEquals(1e6, Scorer.priorBoost(1e6, 3, 1, 1e-3, new int[] {5, 3, 2}), 0);
        assertEquals(100.0 * 3 * 2 / (8.0 * 1), Scorer.priorBoost(100, 3, 2, 8, new int[] {-5, 0, 2}), 0);
    }

    @Test
    public void tiesGoToTheLowerIndexAndANaNWins() {
        assertEquals(1, Scorer.argmax(new double[] {0, 2, 2}));
        assertEquals(2, Scorer.argmax(new double[] {0, 2, Double.NaN}));
    }

    @Test(expected = IllegalArgumentException.class)
    public void refusesAnEmbeddingOfTheWrongSize() throws Exception {
        new Scorer(TestBundles.read(TestBundles.document())).scores(new float[2]);
    }
}
