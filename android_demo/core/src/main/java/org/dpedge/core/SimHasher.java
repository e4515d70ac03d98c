package org.dpedge.core;

/**
 * SimHash bucket ids: one bucket per vote table from the sides of an embedding's projections
 * ({@code runtime/simhash.py}, {@code docs/bundle-format.md} section 7).
 *
 * <p>Why its own class: the bit rule is the contract between the exporter, which filled the vote
 * tables, and every reader. For table t, bit h is 1 iff {@code hyperplanes[t][h] . x >
 * offsets[t][h]} (strictly: equality gives 0; without {@code hashing.offsets} every offset is
 * 0), and the bucket is {@code sum_h bit_h 2^h}, so hyperplane 0 is the least significant bit.
 * Dot products are summed in double from the stored float32 values and compared with the
 * float32 offset widened to double, as the reference does, so the two agree on every bit but
 * for projections within about 1e-12 of their offset.
 */
public final class SimHasher {
    private final float[] hyperplanes;
    private final float[] offsets;
    private final int tables;
    private final int bits;
    private final int dim;

    /** Hyperplanes without offsets: every threshold 0. */
    public SimHasher(float[] hyperplanes, int tables, int bits, int dim) {
        this(hyperplanes, null, tables, bits, dim);
    }

    /**
     * @param hyperplanes float32 {@code [tables][bits][dim]} flattened in C order (not copied)
     * @param offsets float32 {@code [tables][bits]} flattened in C order (not copied), or null
     *     for all zero
     */
    public SimHasher(float[] hyperplanes, float[] offsets, int tables, int bits, int dim) {
        if (tables < 1 || bits < 1 || bits > 30 || dim < 1
                || hyperplanes.length != (long) tables * bits * dim) {
            throw new IllegalArgumentException("hyperplanes must hold tables x bits x dim = " + tables + " x " + bits
                    + " x " + dim + " values, got " + hyperplanes.length);
        }
        if (offsets != null && offsets.length != (long) tables * bits) {
            throw new IllegalArgumentException("offsets must hold tables x bits = " + tables + " x " + bits
                    + " values, got " + offsets.length);
        }
        this.hyperplanes = hyperplanes;
        this.offsets = offsets;
        this.tables = tables;
        this.bits = bits;
        this.dim = dim;
    }

    /** The bucket id of the embedding in each table, each in [0, 2^bits). */
    public int[] buckets(float[] embedding) {
        if (embedding.length != dim) {
            throw new IllegalArgumentException("embedding has " + embedding.length + " values, expected " + dim);
        }
        int[] out = new int[tables];
        int row = 0;
        int plane = 0;
        for (int t = 0; t < tables; t++) {
            int bucket = 0;
            for (int h = 0; h < bits; h++, row += dim, plane++) {
                double dot = 0;
                for (int i = 0; i < dim; i++) {
                    dot += (double) embedding[i] * (double) hyperplanes[row + i];
                }
                double offset = offsets == null ? 0.0 : (double) offsets[plane];
                if (dot > offset) {
                    bucket |= 1 << h;
                }
            }
            out[t] = bucket;
        }
        return out;
    }

    public int tables() {
        return tables;
    }

    public int bits() {
        return bits;
    }

    public int dim() {
        return dim;
    }

    /** Whether the hyperplanes have offsets (hashing.offsets). */
    public boolean hasOffsets() {
        return offsets != null;
    }
}
