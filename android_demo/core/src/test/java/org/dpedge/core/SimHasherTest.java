package org.dpedge.core;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;

import org.junit.Test;

/** The normative bit rule: bit h is 1 iff dot > 0, hyperplane 0 is the least significant bit. */
public class SimHasherTest {

    /** runtime/simhash.py's doctest: planes = eye(3)[None, :2, :], x = [0.5, -1, 0] gives bucket 1. */
    @Test
    public void mirrorsThePythonDoctest() {
        float[] planes = {1, 0, 0, 0, 1, 0};  // 1 table, 2 bits, 3-d
        SimHasher h = new SimHasher(planes, 1, 2, 3);
        assertArrayEquals(new int[] {1}, h.buckets(new float[] {0.5f, -1.0f, 0.0f}));
    }

    @Test
    public void hyperplaneZeroIsTheLeastSignificantBit() {
        SimHasher h = new SimHasher(new float[] {1, 0, 0, 0, 1, 0, 0, 0, 1}, 1, 3, 3);
        assertArrayEquals(new int[] {0b001}, h.buckets(new float[] {1, -1, -1}));
        assertArrayEquals(new int[] {0b010}, h.buckets(new float[] {-1, 1, -1}));
        assertArrayEquals(new int[] {0b100}, h.buckets(new float[] {-1, -1, 1}));
        assertArrayEquals(new int[] {0b111}, h.buckets(new float[] {1, 1, 1}));
    }

    @Test
    public void zeroProjectionGivesBitZero() {
        SimHasher h = new SimHasher(new float[] {1, 0, 0, 1}, 1, 2, 2);
        assertArrayEquals(new int[] {0}, h.buckets(new float[] {0, 0}));
        assertArrayEquals(new int[] {0}, h.buckets(new float[] {-0.0f, Float.NaN}));
    }

    @Test
    public void eachTableHashesWithItsOwnPlanes() {
        // table 0: x, y; table 1: z, -x (the layout of TestBundles)
        SimHasher h = new SimHasher(new float[] {1, 0, 0, 0, 1, 0, 0, 0, 1, -1, 0, 0}, 2, 2, 3);
        assertArrayEquals(new int[] {1, 1}, h.buckets(new float[] {0.6f, -0.8f, 0.1f}));
        assertArrayEquals(new int[] {2, 2}, h.buckets(new float[] {-0.6f, 0.8f, -0.1f}));
    }

    @Test
    public void accumulatesInDouble() {
        // In float arithmetic 1e8 + 1 - 1e8 is 0; in double it is 1, so the bit is set.
        SimHasher h = new SimHasher(new float[] {1e8f, 1f, -1e8f}, 1, 1, 3);
        assertArrayEquals(new int[] {1}, h.buckets(new float[] {1, 1, 1}));
    }

    /** With hashing.offsets: bit h is 1 iff dot > offset_h (strictly); offsets are per table and bit. */
    @Test
    public void offsetsMoveTheThreshold() {
        float[] planes = {1, 0, 0, 1};  // 1 table, 2 bits, 2-d
        SimHasher h = new SimHasher(planes, new float[] {0.5f, -0.25f}, 1, 2, 2);
        assertArrayEquals(new int[] {0b10}, h.buckets(new float[] {0.4f, 0f}));
        assertArrayEquals(new int[] {0b11}, h.buckets(new float[] {0.6f, 0f}));
        assertArrayEquals(new int[] {0b00}, h.buckets(new float[] {0.5f, -0.25f}));  // equal: bit 0
        assertArrayEquals(new int[] {0b00}, h.buckets(new float[] {Float.NaN, Float.NaN}));
        SimHasher zero = new SimHasher(planes, new float[] {0f, 0f}, 1, 2, 2);
        SimHasher none = new SimHasher(planes, 1, 2, 2);
        float[] x = {0.3f, -0.7f};
        assertArrayEquals(none.buckets(x), zero.buckets(x));
        assertEquals(false, none.hasOffsets());
    }

    @Test(expected = IllegalArgumentException.class)
    public void refusesOffsetsOfTheWrongSize() {
        new SimHasher(new float[] {1, 0, 0, 1}, new float[] {0f}, 1, 2, 2);
    }

    @Test(expected = IllegalArgumentException.class)
    public void refusesAWrongDimension() {
        new SimHasher(new float[] {1, 0}, 1, 1, 2).buckets(new float[] {1, 0, 0});
    }

    @Test
    public void reportsItsShape() {
        SimHasher h = new SimHasher(new float[24], 2, 3, 4);
        assertEquals(2, h.tables());
        assertEquals(3, h.bits());
        assertEquals(4, h.dim());
    }
}
