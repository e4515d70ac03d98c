package org.dpedge.core;

/**
 * SimHash bucket ids: one bucket per table from the signs of an embedding's projections.
 *
 * <p>Why its own class: the bit rule is the normative contract between the exporter, which
 * filled the vote tables, and every reader (bundle format section 4, {@code runtime/simhash.py}).
 * For table t, bit h is 1 iff {@code dot(x, hyperplanes[t][h]) > 0} (strictly: 0 gives bit 0),
 * and the bucket is {@code sum_h bit_h * 2^h}, so hyperplane 0 is the least significant bit.
 * Dot products are accumulated in double from the stored float32 values, as the reference
 * does, so the two agree on every sign except projections within about 1e-12 of zero.
 */
public final class SimHasher {
    private final float[] hyperplanes;
    private final int tables;
    private final int bits;
    private final int dim;

    /**
     * @param hyperplanes float32 {@code [tables][bits][dim]} flattened in C order (not copied)
     */
    public SimHasher(float[] hyperplanes, int tables, int bits, int dim) {
        if (tables < 1 || bits < 1 || bits > 30 || dim < 1
                || hyperplanes.length != (long) tables * bits * dim) {
            throw new IllegalArgumentException("hyperplanes must hold tables x bits x dim = " + tables + " x " + bits
                    + " x " + dim + " values, got " + hyperplanes.length);
        }
        this.hyperplanes = hyperplanes;
        this.tables = tables;
        this.bits = bits;
        this.dim = dim;
    }

    /** The hasher of a bundle's hyperplanes. */
    public SimHasher(Bundle bundle) {
        this(bundle.hyperplanesRef(), bundle.tables(), bundle.bits(), bundle.dim());
    }

    /** The bucket id of the embedding in each table, each in [0, 2^bits). */
    public int[] buckets(float[] embedding) {
        if (embedding.length != dim) {
            throw new IllegalArgumentException("embedding has " + embedding.length + " values, expected " + dim);
        }
        int[] out = new int[tables];
        int row = 0;
        for (int t = 0; t < tables; t++) {
            int bucket = 0;
            for (int h = 0; h < bits; h++, row += dim) {
                double dot = 0;
                for (int i = 0; i < dim; i++) {
                    dot += (double) embedding[i] * (double) hyperplanes[row + i];
                }
                if (dot > 0) {
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
}
