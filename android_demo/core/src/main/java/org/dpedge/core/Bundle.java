package org.dpedge.core;

import java.util.List;
import java.util.Map;

/**
 * A validated dpedge bundle: the released DP statistics (vote tables with their SimHash
 * hyperplanes, class statistics, or both) and the sentence encoder they are keyed on (formats
 * 1.x, 2.x, 3.x and 4.x, {@code docs/bundle-format.md}).
 *
 * <p>Why it exists: it is the one immutable value a {@link BundleReader} hands out, so the rest
 * of the library never sees msgpack, and every instance has passed the same checks as the
 * Python reference reader. Everything in it is released, public data: reading it any number
 * of times costs no privacy budget.
 *
 * <p>Arrays are flat, in C order: {@code hyperplanes} is {@code [tables][bits][dim]} and
 * {@code votes} is {@code [tables][2^bits][labels]}. The public accessors return copies of
 * those; the package uses the arrays directly. {@link Encoder#model()} is the exception (it
 * is most of the file, so it is not copied).
 *
 * <p>Format 2 adds optional fields (null when absent): hyperplane {@link #offsets()}, the
 * released {@link #classStats()}, the label descriptions' embeddings {@link #prior()} and
 * the blend's weights {@link #scoring()}; {@link Scorer} uses them as {@code runtime/scoring.py}
 * does.
 *
 * <p>From format 3 the vote tables are optional (the exporter's default bundle releases class
 * statistics alone): without them {@link #hasVotes()} is false, {@link #lsh()},
 * {@link #hyperplanes()}, {@link #votes()} and {@link #offsets()} are null, {@link #tables()} and
 * {@link #bits()} are 0, and {@link #dim()} is the encoder's. Such a bundle always has
 * {@link #classStats()} (the reader refuses one with neither).
 */
public final class Bundle {
    private final List<String> labels;
    private final List<String> labelDescriptions;
    private final Map<String, Object> privacy;
    private final Map<String, Object> lsh;
    private final int tables;
    private final int bits;
    private final int dim;
    private final float[] hyperplanes;
    private final short[] votes;
    private final Encoder encoder;
    private final Map<String, Object> exporter;
    private final float[] offsets;
    private final ClassStats classStats;
    private final float[] prior;
    private final Map<String, Object> scoring;

    Bundle(List<String> labels, List<String> labelDescriptions, Map<String, Object> privacy, Map<String, Object> lsh,
           int tables, int bits, int dim, float[] hyperplanes, short[] votes, Encoder encoder,
           Map<String, Object> exporter, float[] offsets, ClassStats classStats, float[] prior,
           Map<String, Object> scoring) {
        this.labels = labels;
        this.labelDescriptions = labelDescriptions;
        this.privacy = privacy;
        this.lsh = lsh;
        this.tables = tables;
        this.bits = bits;
        this.dim = dim;
        this.hyperplanes = hyperplanes;
        this.votes = votes;
        this.encoder = encoder;
        this.exporter = exporter;
        this.offsets = offsets;
        this.classStats = classStats;
        this.prior = prior;
        this.scoring = scoring;
    }

    /** Class names; the index is the class index used by the vote tables. */
    public List<String> labels() {
        return labels;
    }

    /** The public description of each label, in label order, or null if the bundle has none. */
    public List<String> labelDescriptions() {
        return labelDescriptions;
    }

    /**
     * The whole privacy map, for display (epsilon, delta, mechanism, noise source...). Values
     * are Long/BigInteger, Double, String, Boolean, byte[], List or Map, unmodifiable.
     */
    public Map<String, Object> privacy() {
        return privacy;
    }

    /** The total privacy budget of the release (pure epsilon-DP). */
    public double epsilon() {
        return Fields.toDouble(privacy.get("epsilon"));
    }

    /**
     * The {@code lsh} map without the hyperplanes and offsets (family, tables, bits, dim,
     * seed...), or null when the bundle has no vote tables (format 3).
     */
    public Map<String, Object> lsh() {
        return lsh;
    }

    /**
     * Whether the bundle has vote tables (and so hyperplanes to hash with): always before format
     * 3, optional from it.
     */
    public boolean hasVotes() {
        return votes != null;
    }

    /** T, the number of hash tables (0 without vote tables). */
    public int tables() {
        return tables;
    }

    /** H, the bits per table; each table has 2^H buckets (0 without vote tables). */
    public int bits() {
        return bits;
    }

    /** D, the embedding dimension. */
    public int dim() {
        return dim;
    }

    /**
     * A copy of the hyperplanes, float32 {@code [tables][bits][dim]} flattened in C order, or
     * null without vote tables.
     */
    public float[] hyperplanes() {
        return hyperplanes == null ? null : hyperplanes.clone();
    }

    /**
     * A copy of the noisy votes, int16 {@code [tables][2^bits][labels]} flattened in C order, or
     * null without vote tables.
     */
    public short[] votes() {
        return votes == null ? null : votes.clone();
    }

    float[] hyperplanesRef() {
        return hyperplanes;
    }

    short[] votesRef() {
        return votes;
    }

    public Encoder encoder() {
        return encoder;
    }

    /** Who wrote the bundle: name, version, created (ISO 8601 UTC). */
    public Map<String, Object> exporter() {
        return exporter;
    }

    /**
     * A copy of the hyperplane offsets, float32 {@code [tables][bits]} flattened in C order
     * (format 2: bit h is 1 iff the dot product exceeds its offset), or null (all zero).
     */
    public float[] offsets() {
        return offsets == null ? null : offsets.clone();
    }

    float[] offsetsRef() {
        return offsets;
    }

    /** The released noisy class statistics (formats 2 and 3), or null. */
    public ClassStats classStats() {
        return classStats;
    }

    /**
     * A copy of the label descriptions' embeddings, float32 {@code [labels][dim]} flattened in
     * C order (format 2, public text only), or null.
     */
    public float[] prior() {
        return prior == null ? null : prior.clone();
    }

    float[] priorRef() {
        return prior;
    }

    /**
     * The blend's weights and temperatures by name, plus free-text entries such as "rule"
     * (format 2), or null when the bundle has none (then the defaults apply). Unmodifiable.
     */
    public Map<String, Object> scoring() {
        return scoring;
    }

    /** Whether the bundle uses any format-2 field (offsets, class statistics, prior or scoring). */
    public boolean usesFormat2() {
        return offsets != null || classStats != null || prior != null || scoring != null;
    }

    /**
     * Whether the exporter writes this bundle as format 3.0 rather than 1.2: it has no vote
     * tables, or anything beyond them (Python's {@code Bundle.uses_class_stats_format}).
     */
    public boolean usesClassStatsFormat() {
        return votes == null || usesFormat2();
    }

    /**
     * The released class statistics (format 2: one release; format 3: the counts, then the
     * sums): noisy per-class sums and counts of the embeddings projected into a public
     * subspace, {@code z = projection (x - origin)}.
     *
     * <p>Why: they give the scorer its class centroids ({@code runtime/centroids.py}); like the
     * vote tables they are released data, so using them is post-processing.
     */
    public static final class ClassStats {
        private final int k;
        private final int dim;
        private final float[] origin;
        private final float[] projection;
        private final float[] sums;
        private final float[] counts;

        ClassStats(int k, int dim, float[] origin, float[] projection, float[] sums, float[] counts) {
            this.k = k;
            this.dim = dim;
            this.origin = origin;
            this.projection = projection;
            this.sums = sums;
            this.counts = counts;
        }

        /** k, the dimension of the public subspace (1 <= k <= dim). */
        public int k() {
            return k;
        }

        /** D, the embedding dimension. */
        public int dim() {
            return dim;
        }

        /** A copy of the origin of the subspace, float32 {@code [dim]}. */
        public float[] origin() {
            return origin.clone();
        }

        /** A copy of the projection (orthonormal rows), float32 {@code [k][dim]} in C order. */
        public float[] projection() {
            return projection.clone();
        }

        /** A copy of the noisy per-class sums, float32 {@code [labels][k]} in C order. */
        public float[] sums() {
            return sums.clone();
        }

        /** A copy of the noisy per-class counts, float32 {@code [labels]}. */
        public float[] counts() {
            return counts.clone();
        }

        float[] originRef() {
            return origin;
        }

        float[] projectionRef() {
            return projection;
        }

        float[] sumsRef() {
            return sums;
        }

        float[] countsRef() {
            return counts;
        }
    }

    /**
     * The sentence encoder shipped in the bundle and what an inference engine needs to run it.
     *
     * <p>Why separate: the app hands exactly this to ONNX Runtime or LiteRT (through its
     * {@link TextEncoder}); nothing else in the bundle is executable.
     */
    public static final class Encoder {
        private final String format;
        private final byte[] model;
        private final String tokenizerJson;
        private final int maxLength;
        private final int dim;
        private final String pooling;
        private final boolean normalized;
        private final List<String> inputs;
        private final String output;
        private final Map<String, Object> facts;
        private final String checkText;
        private final float[] checkEmbedding;

        Encoder(String format, byte[] model, String tokenizerJson, int maxLength, int dim, String pooling,
                boolean normalized, List<String> inputs, String output, Map<String, Object> facts, String checkText,
                float[] checkEmbedding) {
            this.format = format;
            this.model = model;
            this.tokenizerJson = tokenizerJson;
            this.maxLength = maxLength;
            this.dim = dim;
            this.pooling = pooling;
            this.normalized = normalized;
            this.inputs = inputs;
            this.output = output;
            this.facts = facts;
            this.checkText = checkText;
            this.checkEmbedding = checkEmbedding;
        }

        /** "onnx" or "tflite". */
        public String format() {
            return format;
        }

        /**
         * The serialized model (ONNX protobuf or TFLite flatbuffer). Not a copy, because it is
         * tens of megabytes: do not modify it.
         */
        public byte[] model() {
            return model;
        }

        /** The Hugging Face tokenizer.json, for {@link WordPieceTokenizer}. */
        public String tokenizerJson() {
            return tokenizerJson;
        }

        /** Token sequences (including [CLS]/[SEP]) are truncated to this length. */
        public int maxLength() {
            return maxLength;
        }

        public int dim() {
            return dim;
        }

        /** "mean": pooling is done inside the graph. */
        public String pooling() {
            return pooling;
        }

        /** true: L2 normalisation is done inside the graph. */
        public boolean normalized() {
            return normalized;
        }

        /** Graph inputs, a subset of input_ids, attention_mask, token_type_ids. */
        public List<String> inputs() {
            return inputs;
        }

        /** The output tensor (ONNX) or signature output (TFLite) name. */
        public String output() {
            return output;
        }

        /** Informational facts: name, quantization, recipe, fidelity... */
        public Map<String, Object> facts() {
            return facts;
        }

        /** A fixed public text for checking the engine, or null (bundles before format 1.1). */
        public String checkText() {
            return checkText;
        }

        /** The exporter's embedding of {@link #checkText()} (a copy), or null. */
        public float[] checkEmbedding() {
            return checkEmbedding == null ? null : checkEmbedding.clone();
        }

        float[] checkEmbeddingRef() {
            return checkEmbedding;
        }
    }
}
