package org.dpedge.core;

import java.math.BigDecimal;
import java.math.MathContext;
import java.math.RoundingMode;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A validated bundle of format 1 (docs/bundle-format.md): the released noisy statistics, the
 * public inputs they were computed with, and the encoder that embeds a text the way they
 * expect (its own, or the encoder pack's it names: a statistics bundle, 1.1). The value
 * {@link BundleReader#read} hands out. Everything in it is released or public: reading it any
 * number of times costs no privacy budget.
 *
 * <p>Arrays are flat, in C order, as released: {@code classCounts} [C], {@code classSums}
 * [C][k] in grid units, {@code origin} [D], {@code projection} [k][D], {@code votes}
 * [T][2^H][C], {@code hyperplanes} [T][H][D], {@code offsets} [T][H], {@code prior} [C][D],
 * the head's (1.1) {@code headOrigin} [D], {@code headWeights} [C][D], {@code headBias} [C];
 * absent ones are null. Beside a person-level head (1.3), {@code unitCount} is the noisy number
 * of persons ({@code releases.unit_count.value}, possibly negative), else null. The public
 * accessors return copies.
 */
public final class Bundle {
    final List<String> labels;
    final List<String> labelDescriptions;
    final Map<String, Object> privacy;
    final Map<String, PrivacyFacts> releases;
    final HeadFacts head;
    final int[] version;
    final int[] classCounts;
    final int[] classSums;
    final float[] origin;
    final float[] projection;
    final short[] votes;
    final float[] hyperplanes;
    final float[] offsets;
    final float[] prior;
    final float[] headOrigin;
    final float[] headWeights;
    final float[] headBias;
    final Integer unitCount;
    final int k;
    final int tables;
    final int bits;
    final Map<?, ?> scoring;
    final Map<String, Object> exporter;
    final Encoder encoder;

    final byte[] encoderPack;

    Bundle(Map<String, Object> v, Map<String, Integer> dims, Map<String, PrivacyFacts> releases, HeadFacts head,
            int[] version, Encoder encoder, byte[] encoderPack) {
        labels = Contract.cast(publicCopy(v.get("labels")));
        labelDescriptions = Contract.cast(publicCopy(v.get("label_descriptions")));
        privacy = Contract.cast(publicCopy(v.get("privacy")));
        this.releases = Collections.unmodifiableMap(releases);
        this.head = head;
        this.version = version;
        classCounts = (int[]) v.get("releases.class_counts.values");
        classSums = (int[]) v.get("releases.class_sums.values");
        origin = (float[]) v.get("subspace.origin");
        projection = (float[]) v.get("subspace.projection");
        votes = (short[]) v.get("releases.votes.values");
        hyperplanes = (float[]) v.get("hashing.hyperplanes");
        offsets = (float[]) v.get("hashing.offsets");
        prior = (float[]) v.get("prior");
        headOrigin = (float[]) v.get("releases.head.origin");
        headWeights = (float[]) v.get("releases.head.weights");
        headBias = (float[]) v.get("releases.head.bias");
        Long units = (Long) v.get("releases.unit_count.value");  // an int32 by its row's bounds
        unitCount = units == null ? null : units.intValue();
        k = classSums == null ? 0 : dims.get("k");
        tables = votes == null ? 0 : dims.get("T");
        bits = votes == null ? 0 : dims.get("H");
        scoring = (Map<?, ?>) v.get("scoring");
        exporter = Contract.cast(publicCopy(v.getOrDefault("exporter", Collections.emptyMap())));
        this.encoder = encoder;
        this.encoderPack = encoderPack;
    }

    /** A parsed value with binary data copied out and containers unmodifiable: nothing public aliases the file. */
    static Object publicCopy(Object v) {
        if (v instanceof Container.Bin) {
            return ((Container.Bin) v).copy();
        } else if (v instanceof List) {
            List<Object> out = new ArrayList<>();
            for (Object x : (List<?>) v) {
                out.add(publicCopy(x));
            }
            return Collections.unmodifiableList(out);
        } else if (v instanceof Map) {
            Map<String, Object> out = new LinkedHashMap<>();
            ((Map<?, ?>) v).forEach((key, x) -> out.put((String) key, publicCopy(x)));
            return Collections.unmodifiableMap(out);
        }
        return v;
    }

    /** The classes, in class-index order (escape them before showing: {@link Text#escape}). */
    public List<String> labels() {
        return labels;
    }

    /** A public description of each label, or null. */
    public List<String> labelDescriptions() {
        return labelDescriptions;
    }

    /** The privacy map as read (epsilon, delta, max_records_per_unit, the unit and relation...). */
    public Map<String, Object> privacy() {
        return privacy;
    }

    /**
     * Each pure release's privacy facts by statistic, in release order (schema.json "statistics":
     * unit_count, 1.3, last); the head is {@link #head()}.
     */
    public Map<String, PrivacyFacts> releases() {
        return releases;
    }

    /** The head release's facts (1.1: a linear softmax layer, an (epsilon, delta) release), or null. */
    public HeadFacts head() {
        return head;
    }

    /** The bundle's epsilon; the releases' shares (the head's included) add up to it. */
    public double epsilon() {
        return (Double) privacy.get("epsilon");
    }

    /**
     * The bundle's delta: 0.0 for pure epsilon-DP; with a head (1.1) the head's delta, above 0,
     * and the guarantee is approximate: delta is the additive slack in the definition, never a
     * probability that the epsilon bound fails ({@link #deltaStatement()}, the contract's words).
     */
    public double delta() {
        return (Double) privacy.get("delta");
    }

    /**
     * What delta is, in the contract's short words (schema.json "wording" "delta" "summary"), as
     * {@link #privacySummary()} puts it in parentheses after a delta above 0.
     */
    public static String deltaSummary() {
        return (String) ((Map<?, ?>) Contract.map("wording").get("delta")).get("summary");
    }

    /**
     * What delta is, the definition in the contract's words (schema.json "wording" "delta"
     * "statement"): an app shows it beside the summary of a bundle whose delta is above 0, never
     * words of its own.
     */
    public static String deltaStatement() {
        return (String) ((Map<?, ?>) Contract.map("wording").get("delta")).get("statement");
    }

    /**
     * One line: the guarantee in the bundle's own words, numbers to 10 significant digits, as the
     * reference says it (runtime/describe.py privacy_summary). A bundle with a head says what delta
     * is in the contract's words ({@link #deltaSummary()}) and never says pure.
     */
    public String privacySummary() {
        StringBuilder parts = new StringBuilder();
        for (PrivacyFacts r : releases.values()) {
            parts.append(parts.length() == 0 ? "" : ", ").append(r.statistic()).append(" eps ").append(g10(r.epsilon()))
                    .append(" (scale ").append(g10(r.noiseScale())).append(')');
        }
        Map<?, ?> wording = Contract.map("wording");
        String record = (String) ((Map<?, ?>) wording.get("record")).get("privacy_unit");
        String unit = record.equals(privacy.get("privacy_unit")) ? record  // the reader checked the words against K
                : ((String) ((Map<?, ?>) wording.get("person")).get("privacy_unit")).replace("{K}",
                        Long.toString(recordsPerUnit()));
        if (head == null) {
            String batches = batches() > 1 ? " in each of " + batches() + " disjoint batches, summed" : "";
            return "epsilon = " + g10(epsilon()) + ", delta = 0 (pure DP) per " + unit + ", spent on " + parts + batches
                    + "; discrete Laplace noise";
        }
        return "epsilon = " + g10(epsilon()) + ", delta = " + g10(delta()) + " (" + deltaSummary() + ") per " + unit
                + ", spent on " + parts + ", head eps " + g10(head.epsilon()) + " delta " + g10(head.delta())
                + " (DP-SGD, " + head.steps() + " steps, sample rate " + g10(head.sampleRate()) + ", noise multiplier "
                + g10(head.noiseMultiplier()) + "); discrete Laplace and Gaussian noise";
    }

    /** Python's {@code format(x, ".10g")} of a finite double: 10 significant digits, half to even, zeros stripped. */
    static String g10(double x) {
        if (x == 0) {
            return 1 / x < 0 ? "-0" : "0";
        }
        BigDecimal d = new BigDecimal(x).round(new MathContext(10, RoundingMode.HALF_EVEN)).stripTrailingZeros();
        int exp = d.precision() - d.scale() - 1;
        if (exp >= -4 && exp < 10) {
            return d.toPlainString();
        }
        String digits = d.unscaledValue().abs().toString();
        return (d.signum() < 0 ? "-" : "") + digits.charAt(0) + (digits.length() > 1 ? "." + digits.substring(1) : "")
                + (exp < 0 ? "e-" : "e+") + (Math.abs(exp) < 10 ? "0" : "") + Math.abs(exp);
    }

    /** B, the disjoint batches whose releases the statistics sum (1.1; 1 when privacy.batches is absent). */
    public long batches() {
        return (Long) privacy.getOrDefault("batches", 1L);
    }

    /** K, the records one privacy unit may contribute. */
    public long recordsPerUnit() {
        return (Long) privacy.get("max_records_per_unit");
    }

    /** [major, minor]. */
    public int[] version() {
        return version.clone();
    }

    /** D, the embedding size. */
    public int dim() {
        return encoder.dim;
    }

    /** Informational: who wrote the bundle, when (any values). */
    public Map<String, Object> exporter() {
        return exporter;
    }

    /** The encoder the bundle is scored with: its own, or (a statistics bundle) its encoder pack's. */
    public Encoder encoder() {
        return encoder;
    }

    /** The SHA-256 of the encoder pack a statistics bundle (1.1) names (a copy); null: it carries its encoder. */
    public byte[] encoderPack() {
        return encoderPack == null ? null : encoderPack.clone();
    }

    /**
     * The sentence encoder and what an engine needs to run it (section 6). The app hands
     * {@link #model()} to ONNX Runtime or LiteRT through its {@link TextEncoder}; an ONNX model's
     * initializers keep their data in {@link #weights()}, at the ranges {@link #externalData()} lists.
     */
    public static final class Encoder {
        final String format;
        final String family;
        final Container.Bin model;
        final Container.Bin weights;
        final List<ModelFamily.ExternalData> externalData;
        final String tokenizerJson;
        final Tokenizer tokenizer;
        final int maxLength;
        final int dim;
        final String textPrefix;
        final List<String> inputs;
        final String output;
        final String checkText;
        final float[] checkEmbedding;
        final Map<String, Object> facts;

        Encoder(Map<String, Object> v, Tokenizer tokenizer, List<ModelFamily.ExternalData> externalData) {
            format = (String) v.get("encoder.format");
            family = (String) v.getOrDefault("encoder.family", ModelFamily.DEFAULT_FAMILY);
            model = (Container.Bin) v.get("encoder.model");
            weights = (Container.Bin) v.get("encoder.weights");
            this.externalData = externalData;
            tokenizerJson = (String) v.get("encoder.tokenizer_json");
            this.tokenizer = tokenizer;
            maxLength = ((Long) v.get("encoder.max_length")).intValue();
            dim = ((Long) v.get("encoder.dim")).intValue();
            textPrefix = (String) v.get("encoder.text_prefix");
            inputs = Contract.cast(publicCopy(v.get("encoder.inputs")));
            output = (String) v.get("encoder.output");
            checkText = (String) v.get("encoder.check_text");
            checkEmbedding = (float[]) v.get("encoder.check_embedding");
            facts = Contract.cast(publicCopy(v.getOrDefault("encoder.facts", Collections.emptyMap())));
        }

        /** "onnx" or "tflite". */
        public String format() {
            return format;
        }

        /** The architecture ({@code encoder.family}, 1.2): "bert" (also when absent) or "mpnet". */
        public String family() {
            return family;
        }

        /** The model: an ONNX protobuf or a TFLite flatbuffer (a copy). */
        public byte[] model() {
            return model.copy();
        }

        /** An ONNX encoder's weights: a read-only little-endian view of the file's bytes (empty for TFLite). */
        public ByteBuffer weights() {
            ByteBuffer b = weights == null ? ByteBuffer.allocate(0) : weights.buffer();
            return b.asReadOnlyBuffer().order(ByteOrder.LITTLE_ENDIAN);
        }

        /** The ONNX initializers whose data is in {@link #weights()}, in the model's order. */
        public List<ModelFamily.ExternalData> externalData() {
            return externalData;
        }

        /** The tokenizer.json, as checked. */
        public String tokenizerJson() {
            return tokenizerJson;
        }

        /** The contract's tokenizer built from it. */
        public Tokenizer tokenizer() {
            return tokenizer;
        }

        /** Tokens per text, the two special tokens included ([CLS] and [SEP], or {@code <s>} and {@code </s>}). */
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

        /** The model's inputs, to feed these alone: input_ids, attention_mask (ones), token_type_ids (zeros). */
        public List<String> inputs() {
            return inputs;
        }

        /** The model's unit-embedding output. */
        public String output() {
            return output;
        }

        /** A public text {@link Classifier} embeds at load. */
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
