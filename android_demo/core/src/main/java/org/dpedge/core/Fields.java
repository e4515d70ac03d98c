package org.dpedge.core;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The bundle format 1.0 as data: every key, its type, whether it must be present, its bounds,
 * dtype, shape and text rule, in the order a writer writes them. The Java twin of
 * {@code runtime/bundle/schema.py}'s FIELDS, DIMS and CONDITIONS, row for row.
 *
 * <p>Why a table: {@link BundleReader} interprets it rather than checking each field by hand,
 * so every field gets the same treatment with the same words as the Python reader, and the
 * golden data carries Python's table, which a test compares with this one: a field added on one
 * side only fails the build.
 */
final class Fields {
    private Fields() {
    }

    /**
     * One key of the format. {@code kind}: "map", "str", "int", "float", "bin", "version",
     * "strings" (an array of strings) or "ndarray" (an array record); {@code need}: "required",
     * "optional" or "iff X" (X one of {@link #CONDITIONS}); {@code low}/{@code high} bound a
     * number, or the length of a string, a bin or an array of strings (null: unbounded).
     */
    static final class Field {
        final String path;
        final String kind;
        final String need;
        Double low;
        Double high;
        String dtype;
        List<String> shape = Collections.emptyList();
        List<String> choices = Collections.emptyList();
        /** "label", "description", "printable" or null. */
        String text;
        /** A map whose keys are free (exporter, encoder.facts). */
        boolean open;

        Field(String path, String kind, String need) {
            this.path = path;
            this.kind = kind;
            this.need = need;
        }

        String key() {
            return path.substring(path.lastIndexOf('.') + 1);
        }

        String parent() {
            int dot = path.lastIndexOf('.');
            return dot < 0 ? "" : path.substring(0, dot);
        }

        Field bounds(Double lowest, Double highest) {
            low = lowest;
            high = highest;
            return this;
        }

        Field array(String type, String... symbols) {
            dtype = type;
            shape = Arrays.asList(symbols);
            return this;
        }

        Field choices(String... values) {
            choices = Arrays.asList(values);
            return this;
        }

        Field text(String rule) {
            text = rule;
            return this;
        }

        Field open() {
            open = true;
            return this;
        }
    }

    static final double EPSILON_MIN = 1e-6;
    static final double EPSILON_MAX = 1e6;
    static final double MAX_SENSITIVITY = Integer.MAX_VALUE;
    static final double MAX_TEXT_CHARS = 10_000;
    static final int MAX_LABEL_CHARS = 200;
    static final int MAX_DESCRIPTION_CHARS = 2000;
    private static final String R = "required";
    private static final String O = "optional";
    private static final String F4 = "<f4";

    static final List<Field> FIELDS;
    static final Map<String, Field> BY_PATH = new LinkedHashMap<>();
    /** Shape symbols: where each is defined, and its bounds. */
    static final Map<String, Object[]> DIMS = new LinkedHashMap<>();
    /** The conditions of "iff X", worded as the reader's message words them. */
    static final Map<String, String> CONDITIONS = new LinkedHashMap<>();

    static {
        List<Field> f = new ArrayList<>();
        f.add(new Field("format", "str", R).choices("dpedge"));
        f.add(new Field("version", "version", R));
        f.add(new Field("requires", "strings", O).bounds(null, 64.0));
        f.add(new Field("labels", "strings", R).bounds(2.0, 4096.0).text("label"));
        f.add(new Field("label_descriptions", "strings", O).text("description"));
        f.add(new Field("privacy", "map", R));
        f.add(new Field("privacy.epsilon", "float", R).bounds(EPSILON_MIN, EPSILON_MAX));
        f.add(new Field("privacy.delta", "float", R).bounds(0.0, 0.0));
        f.add(new Field("privacy.max_records_per_unit", "int", R).bounds(1.0, 1e6));
        for (String name : new String[] {"neighbour_relation", "privacy_unit", "noise_source"}) {
            f.add(new Field("privacy." + name, "str", R).bounds(null, MAX_TEXT_CHARS).text("printable"));
        }
        f.add(new Field("privacy.public_inputs", "strings", R).bounds(null, 256.0));
        for (String name : new String[] {"noise_library", "noise_library_version", "composition", "post_processing"}) {
            f.add(new Field("privacy." + name, "str", O).bounds(null, MAX_TEXT_CHARS).text("printable"));
        }
        f.add(new Field("releases", "map", R));
        for (String name : PrivacyFacts.STATISTICS) {
            String p = "releases." + name;
            f.add(new Field(p, "map", name.equals(PrivacyFacts.VOTES) ? O : "iff class statistics"));
            f.add(new Field(p + ".epsilon", "float", R).bounds(EPSILON_MIN, EPSILON_MAX));
            f.add(new Field(p + ".sensitivity_l1", "int", R).bounds(1.0, MAX_SENSITIVITY));
            f.add(new Field(p + ".noise_scale", "float", R).bounds(0.0, MAX_SENSITIVITY / EPSILON_MIN));
            f.add(new Field(p + ".mechanism", "str", R).bounds(null, MAX_TEXT_CHARS).text("printable"));
            if (name.equals(PrivacyFacts.CLASS_SUMS)) {
                f.add(new Field(p + ".grid", "int", R).bounds(1.0, 0x1p31));
                f.add(new Field(p + ".clip_l1", "float", R).bounds(0.0, 0x1p31));
            }
            f.add(name.equals(PrivacyFacts.CLASS_COUNTS) ? new Field(p + ".values", "ndarray", R).array("<i4", "C")
                    : name.equals(PrivacyFacts.CLASS_SUMS) ? new Field(p + ".values", "ndarray", R).array("<i4", "C", "k")
                    : new Field(p + ".values", "ndarray", R).array("<i2", "T", "2^H", "C"));
        }
        f.add(new Field("subspace", "map", "iff class statistics"));
        f.add(new Field("subspace.origin", "ndarray", R).array(F4, "D"));
        f.add(new Field("subspace.projection", "ndarray", R).array(F4, "k", "D"));
        f.add(new Field("hashing", "map", "iff votes"));
        f.add(new Field("hashing.hyperplanes", "ndarray", R).array(F4, "T", "H", "D"));
        f.add(new Field("hashing.offsets", "ndarray", O).array(F4, "T", "H"));
        f.add(new Field("hashing.seed", "int", O).bounds(0.0, 0x1p64));  // Python's 2^64 - 1: the same integers
        f.add(new Field("prior", "ndarray", "iff prior").array(F4, "C", "D"));
        f.add(new Field("scoring", "map", "iff blend"));
        f.add(new Field("scoring.centroid_temperature", "float", R).bounds(1e-3, 1e3));
        f.add(new Field("scoring.prior_temperature", "float", R).bounds(1e-3, 1e3));
        f.add(new Field("scoring.prior_records_per_class", "float", R).bounds(0.0, 1e6));
        f.add(new Field("scoring.description_pull", "float", R).bounds(0.0, 1e3));
        f.add(new Field("exporter", "map", O).open());
        f.add(new Field("encoder", "map", R));
        f.add(new Field("encoder.format", "str", R).choices("onnx", "tflite"));
        f.add(new Field("encoder.model", "bin", R).bounds(1.0, null));
        f.add(new Field("encoder.tokenizer_json", "str", R).bounds(1.0, 16e6));
        f.add(new Field("encoder.max_length", "int", R).bounds(2.0, 8192.0));
        f.add(new Field("encoder.dim", "int", R).bounds(1.0, 4096.0));
        f.add(new Field("encoder.text_prefix", "str", R).bounds(null, 64.0).text("printable"));
        f.add(new Field("encoder.inputs", "strings", R).bounds(1.0, 3.0)
                .choices("input_ids", "attention_mask", "token_type_ids"));
        f.add(new Field("encoder.output", "str", R).bounds(1.0, 128.0).text("printable"));
        f.add(new Field("encoder.check_text", "str", R).bounds(1.0, 1000.0).text("printable"));
        f.add(new Field("encoder.check_embedding", "ndarray", R).array(F4, "D"));
        f.add(new Field("encoder.facts", "map", O).open());
        f.add(new Field("encoder.weights", "bin", "iff onnx"));
        f.add(new Field("sha256", "bin", R).bounds(32.0, 32.0));
        FIELDS = Collections.unmodifiableList(f);
        for (Field x : f) {
            BY_PATH.put(x.path, x);
        }
        DIMS.put("C", new Object[] {"the number of labels", 2, 4096});
        DIMS.put("D", new Object[] {"encoder.dim", 1, 4096});
        DIMS.put("k", new Object[] {"rows of subspace.projection", 1, 4096});
        DIMS.put("T", new Object[] {"tables: hashing.hyperplanes' first axis", 1, 1024});
        DIMS.put("H", new Object[] {"bits: hashing.hyperplanes' second axis", 1, 24});
        CONDITIONS.put("class statistics",
                "releases.class_sums or releases.class_counts is present (they and subspace come together)");
        CONDITIONS.put("votes", "releases.votes is present");
        CONDITIONS.put("prior", "label_descriptions and releases.class_sums are present");
        CONDITIONS.put("blend", "releases.class_sums is present");
        CONDITIONS.put("onnx", "encoder.format is onnx");
    }

    /** Whether a condition of "iff X" holds in a document (a field whose parent is absent is absent). */
    static boolean holds(String condition, Map<?, ?> doc) {
        switch (condition) {
            case "class statistics":
                return present(doc, "releases.class_sums") || present(doc, "releases.class_counts");
            case "votes":
                return present(doc, "releases.votes");
            case "prior":
                return present(doc, "label_descriptions") && present(doc, "releases.class_sums");
            case "blend":
                return present(doc, "releases.class_sums");
            default:  // "onnx"
                return doc.get("encoder") instanceof Map && "onnx".equals(((Map<?, ?>) doc.get("encoder")).get("format"));
        }
    }

    static boolean present(Map<?, ?> doc, String path) {
        Object node = doc;
        for (String key : path.split("\\.")) {
            if (!(node instanceof Map) || !((Map<?, ?>) node).containsKey(key)) {
                return false;
            }
            node = ((Map<?, ?>) node).get(key);
        }
        return true;
    }
}
