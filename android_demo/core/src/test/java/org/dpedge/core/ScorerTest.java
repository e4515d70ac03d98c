package org.dpedge.core;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;

import java.util.Arrays;

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

    @Test(expected = IllegalArgumentException.class)
    public void refusesABucketOutOfRange() {
        new Scorer(new short[] {1, 0, 0, 3}, 1, 1, 2).voteSums(new int[] {2});
    }
}
