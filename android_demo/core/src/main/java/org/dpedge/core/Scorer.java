package org.dpedge.core;

/**
 * Algorithm 2 of the paper: add up the noisy vote vectors of the query's bucket in each table.
 *
 * <p>Why separate from hashing: scoring reads only the released tables, so it is
 * post-processing and costs no privacy budget however often it runs; keeping it apart from
 * the encoder and hasher lets tests check it on integer data alone. {@code score[c] = sum over
 * t of votes[t][bucket_t][c]}, summed in a long (no overflow for any valid bundle), and the
 * label is the argmax with ties going to the lower class index, as numpy's argmax does. The
 * Python runtime applies no other post-processing today.
 */
public final class Scorer {
    private final short[] votes;
    private final int tables;
    private final int buckets;
    private final int classes;

    /**
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
    }

    /** The scorer of a bundle's vote tables. */
    public Scorer(Bundle bundle) {
        this(bundle.votesRef(), bundle.tables(), bundle.bits(), bundle.labels().size());
    }

    /** Per-class sums of the noisy votes in the given bucket of each table. */
    public long[] voteSums(int[] bucketIds) {
        if (bucketIds.length != tables) {
            throw new IllegalArgumentException("need one bucket per table (" + tables + "), got " + bucketIds.length);
        }
        long[] sums = new long[classes];
        for (int t = 0; t < tables; t++) {
            int b = bucketIds[t];
            if (b < 0 || b >= buckets) {
                throw new IllegalArgumentException("bucket " + b + " of table " + t + " is outside [0, " + buckets
                        + ")");
            }
            int base = (t * buckets + b) * classes;
            for (int c = 0; c < classes; c++) {
                sums[c] += votes[base + c];
            }
        }
        return sums;
    }

    /** {@link #voteSums} as doubles, the type the Python runtime reports scores in. */
    public double[] scores(int[] bucketIds) {
        long[] sums = voteSums(bucketIds);
        double[] out = new double[sums.length];
        for (int c = 0; c < sums.length; c++) {
            out[c] = sums[c];
        }
        return out;
    }

    /** The index of the largest score; ties go to the lower index. */
    public static int argmax(double[] scores) {
        int best = 0;
        for (int c = 1; c < scores.length; c++) {
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
}
