package org.dpedge.core;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;
import java.util.Map;

/**
 * A validated bundle of format 1.0 ({@code docs/bundle-format.md}): the released noisy
 * statistics, the public inputs they were computed with, and the encoder that embeds a text the
 * way they expect. The one value {@link BundleReader} hands out; every instance has passed the
 * checks of the Python reader. Everything in it is released or public: reading it any number of
 * times costs no privacy budget.
 *
 * <p>Arrays are flat, in C order, as released: {@code classCounts} [C], {@code classSums}
 * [C][k] in grid units, {@code origin} [D], {@code projection} [k][D], {@code votes}
 * [T][2^H][C], {@code hyperplanes} [T][H][D], {@code offsets} [T][H], {@code prior} [C][D]. A
 * bundle has class statistics (counts, sums, subspace, scoring), vote tables (votes,
 * hyperplanes), or both; the absent ones are null. The public accessors return copies; the
 * package reads the arrays directly.
 */
public final class Bundle {
    final List<String> labels;
    final List<String> labelDescriptions;
    final Map<String, Object> privacy;
    final Map<String, PrivacyFacts> releases;
    final int[] version;
    final int[] classCounts;
    final int[] classSums;
    final int k;
    final float[] origin;
    final float[] projection;
    final short[] votes;
    final float[] hyperplanes;
    final float[] offsets;
    final int tables;
    final int bits;
    final float[] prior;
    final Scoring scoring;
    final Map<String, Object> exporter;
    final Encoder encoder;

    Bundle(Builder b) {
        labels = b.labels;
        labelDescriptions = b.labelDescriptions;
        privacy = b.privacy;
        releases = b.releases;
        version = b.version;
        classCounts = b.classCounts;
        classSums = b.classSums;
        k = b.k;
        origin = b.origin;
        projection = b.projection;
        votes = b.votes;
        hyperplanes = b.hyperplanes;
        offsets = b.offsets;
        tables = b.tables;
        bits = b.bits;
        prior = b.prior;
        scoring = b.scoring;
        exporter = b.exporter;
        encoder = b.encoder;
    }

    /** What the reader collects before it builds a Bundle. */
    static final class Builder {
        List<String> labels;
        List<String> labelDescriptions;
        Map<String, Object> privacy;
        Map<String, PrivacyFacts> releases;
        int[] version;
        int[] classCounts;
        int[] classSums;
        int k;
        float[] origin;
        float[] projection;
        short[] votes;
        float[] hyperplanes;
        float[] offsets;
        int tables;
        int bits;
        float[] prior;
        Scoring scoring;
        Map<String, Object> exporter;
        Encoder encoder;
    }

    /** The classes, in class-index order (escape them before showing: {@link Text#escape}). */
    public List<String> labels() {
        return labels;
    }

    /** A public description of each label, or null. */
    public List<String> labelDescriptions() {
        return labelDescriptions;
    }

    /**
     * The privacy map as read, for display: epsilon, delta, max_records_per_unit, the neighbour
     * relation, privacy unit, noise source and public inputs, and the optional informational
     * strings. Unmodifiable.
     */
    public Map<String, Object> privacy() {
        return privacy;
    }

    /** Each release's privacy facts by statistic, in release order. */
    public Map<String, PrivacyFacts> releases() {
        return releases;
    }

    /** The bundle's epsilon (pure epsilon-DP: delta is 0); the releases' shares add up to it. */
    public double epsilon() {
        return (Double) privacy.get("epsilon");
    }

    /** K, the records one privacy unit may contribute. */
    public long recordsPerUnit() {
        return (Long) privacy.get("max_records_per_unit");
    }

    /** [1, minor]. */
    public int[] version() {
        return version.clone();
    }

    public boolean hasClassStatistics() {
        return classSums != null;
    }

    public boolean hasVotes() {
        return votes != null;
    }

    /** D, the embedding size. */
    public int dim() {
        return encoder.dim;
    }

    /** T, the vote tables (0 without). */
    public int tables() {
        return tables;
    }

    /** H, the bits per table (0 without vote tables). */
    public int bits() {
        return bits;
    }

    /** k, the dimension of the public subspace of the class sums (0 without them). */
    public int k() {
        return k;
    }

    public int[] classCounts() {
        return classCounts == null ? null : classCounts.clone();
    }

    public int[] classSums() {
        return classSums == null ? null : classSums.clone();
    }

    public float[] origin() {
        return origin == null ? null : origin.clone();
    }

    public float[] projection() {
        return projection == null ? null : projection.clone();
    }

    public short[] votes() {
        return votes == null ? null : votes.clone();
    }

    public float[] hyperplanes() {
        return hyperplanes == null ? null : hyperplanes.clone();
    }

    public float[] offsets() {
        return offsets == null ? null : offsets.clone();
    }

    public float[] prior() {
        return prior == null ? null : prior.clone();
    }

    /** The blend's constants, or null for a bundle of vote tables alone. */
    public Scoring scoring() {
        return scoring;
    }

    /** Informational: who wrote the bundle, when (any values). */
    public Map<String, Object> exporter() {
        return exporter;
    }

    public Encoder encoder() {
        return encoder;
    }

    /** The blend's constants ({@code scoring}; docs/bundle-format.md section 7). */
    public static final class Scoring {
        public final double centroidTemperature;
        public final double priorTemperature;
        public final double priorRecordsPerClass;
        public final double descriptionPull;

        Scoring(Map<?, ?> m) {
            centroidTemperature = (Double) m.get("centroid_temperature");
            priorTemperature = (Double) m.get("prior_temperature");
            priorRecordsPerClass = (Double) m.get("prior_records_per_class");
            descriptionPull = (Double) m.get("description_pull");
        }
    }

    /**
     * The sentence encoder and what an engine needs to run it (section 6). The app hands
     * {@link #model()} to ONNX Runtime or LiteRT through its {@link TextEncoder}; an ONNX model's
     * initializers keep their data in {@link #weights()}, at the ranges {@link #externalData()}
     * lists, under the placeholder location {@link #WEIGHTS_LOCATION}.
     */
    public static final class Encoder {
        /** Where an ONNX initializer's external data says it is: 256 bytes, "dpedge-weights" and full stops. */
        public static final String WEIGHTS_LOCATION = "dpedge-weights" + ".".repeat(242);

        final String format;
        final byte[] model;
        final Msgpack.Bin weights;
        final List<ModelFamily.ExternalData> externalData;
        final String tokenizerJson;
        final int maxLength;
        final int dim;
        final String textPrefix;
        final List<String> inputs;
        final String output;
        final String checkText;
        final float[] checkEmbedding;
        final Map<String, Object> facts;

        Encoder(Map<?, ?> m, float[] checkEmbedding, List<ModelFamily.ExternalData> externalData) {
            format = (String) m.get("format");
            model = ((Msgpack.Bin) m.get("model")).copy();
            weights = (Msgpack.Bin) m.get("weights");
            this.externalData = externalData;
            tokenizerJson = (String) m.get("tokenizer_json");
            maxLength = (int) (long) (Long) m.get("max_length");
            dim = (int) (long) (Long) m.get("dim");
            textPrefix = (String) m.get("text_prefix");
            @SuppressWarnings("unchecked")
            List<String> in = (List<String>) m.get("inputs");
            inputs = in;
            output = (String) m.get("output");
            checkText = (String) m.get("check_text");
            this.checkEmbedding = checkEmbedding;
            facts = BundleReader.publicMap(m.get("facts"));
        }

        /** "onnx" or "tflite". */
        public String format() {
            return format;
        }

        /** The model: an ONNX protobuf or a TFLite flatbuffer. Not a copy (a TFLite model is 23 MB): do not modify it. */
        public byte[] model() {
            return model;
        }

        /**
         * An ONNX encoder's weights (encoder.weights): a read-only little-endian view of the
         * bundle's bytes, not a copy. Empty for TFLite.
         */
        public ByteBuffer weights() {
            ByteBuffer b = weights == null ? ByteBuffer.allocate(0) : weights.buffer();
            return b.asReadOnlyBuffer().order(ByteOrder.LITTLE_ENDIAN);
        }

        /** The ONNX initializers whose data is in {@link #weights()}, in the model's order. */
        public List<ModelFamily.ExternalData> externalData() {
            return externalData;
        }

        /** The BERT WordPiece tokenizer.json, for {@link WordPieceTokenizer}. */
        public String tokenizerJson() {
            return tokenizerJson;
        }

        /** Tokens per text, [CLS] and [SEP] included. */
        public int maxLength() {
            return maxLength;
        }

        public int dim() {
            return dim;
        }

        /** Prepended to every text before tokenizing (often empty). */
        public String textPrefix() {
            return textPrefix;
        }

        /** The model's inputs: input_ids, attention_mask (all ones), token_type_ids (all zeros). */
        public List<String> inputs() {
            return inputs;
        }

        /** The model's unit-embedding output. */
        public String output() {
            return output;
        }

        /** A public text the app embeds once at load ({@link Classifier#verify()}). */
        public String checkText() {
            return checkText;
        }

        /** The exporter's embedding of {@link #checkText()} (a copy). */
        public float[] checkEmbedding() {
            return checkEmbedding.clone();
        }

        /** Informational: name, quantization, fidelity (any values). */
        public Map<String, Object> facts() {
            return facts;
        }
    }
}
