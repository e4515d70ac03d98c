package org.dpedge.core;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.msgpack.core.MessagePack;
import org.msgpack.core.MessagePacker;

/**
 * Builds small synthetic bundles for the unit tests: a payload as nested Java maps that a
 * test can edit, then sealed (checksum) and packed the way the Python exporter packs them.
 */
final class TestBundles {
    private TestBundles() {
    }

    /** A tiny WordPiece tokenizer.json: [PAD] [UNK] [CLS] [SEP] and a few words. */
    static final String TOKENIZER_JSON = "{\"version\":\"1.0\",\"truncation\":null,\"padding\":null,"
            + "\"added_tokens\":["
            + "{\"id\":0,\"content\":\"[PAD]\",\"single_word\":false,\"lstrip\":false,\"rstrip\":false,"
            + "\"normalized\":false,\"special\":true},"
            + "{\"id\":1,\"content\":\"[UNK]\",\"single_word\":false,\"lstrip\":false,\"rstrip\":false,"
            + "\"normalized\":false,\"special\":true},"
            + "{\"id\":2,\"content\":\"[CLS]\",\"single_word\":false,\"lstrip\":false,\"rstrip\":false,"
            + "\"normalized\":false,\"special\":true},"
            + "{\"id\":3,\"content\":\"[SEP]\",\"single_word\":false,\"lstrip\":false,\"rstrip\":false,"
            + "\"normalized\":false,\"special\":true}],"
            + "\"normalizer\":{\"type\":\"BertNormalizer\",\"clean_text\":true,\"handle_chinese_chars\":true,"
            + "\"strip_accents\":null,\"lowercase\":true},"
            + "\"pre_tokenizer\":{\"type\":\"BertPreTokenizer\"},"
            + "\"post_processor\":{\"type\":\"TemplateProcessing\","
            + "\"single\":[{\"SpecialToken\":{\"id\":\"[CLS]\",\"type_id\":0}},{\"Sequence\":{\"id\":\"A\",\"type_id\":0}},"
            + "{\"SpecialToken\":{\"id\":\"[SEP]\",\"type_id\":0}}],"
            + "\"special_tokens\":{\"[CLS]\":{\"id\":\"[CLS]\",\"ids\":[2],\"tokens\":[\"[CLS]\"]},"
            + "\"[SEP]\":{\"id\":\"[SEP]\",\"ids\":[3],\"tokens\":[\"[SEP]\"]}}},"
            + "\"decoder\":null,"
            + "\"model\":{\"type\":\"WordPiece\",\"unk_token\":\"[UNK]\",\"continuing_subword_prefix\":\"##\","
            + "\"max_input_chars_per_word\":100,\"vocab\":{\"[PAD]\":0,\"[UNK]\":1,\"[CLS]\":2,\"[SEP]\":3,"
            + "\"wake\":4,\"me\":5,\"up\":6,\"play\":7,\"##ing\":8,\"music\":9,\"!\":10,\"cafe\":11,\"中\":12,"
            + "\"un\":13,\"##believ\":14,\"##able\":15,\"##s\":16,\"a\":17,\"##a\":18}}}";

    /**
     * The smallest ONNX model inside the encoder family (ModelFamily): IR 8, opset 18, a graph
     * of one Cast node (input_ids to sentence_embedding). The reader checks its structure; the
     * tests' encoders are stand-ins, so nothing runs it.
     */
    static final byte[] TINY_ONNX = {
        0x08, 0x08, 0x42, 0x02, 0x10, 0x12, 0x3a, 0x27, 0x0a, 0x25,
        0x0a, 0x09, 'i', 'n', 'p', 'u', 't', '_', 'i', 'd', 's',
        0x12, 0x12, 's', 'e', 'n', 't', 'e', 'n', 'c', 'e', '_', 'e', 'm', 'b', 'e', 'd', 'd', 'i', 'n', 'g',
        0x22, 0x04, 'C', 'a', 's', 't'};

    static final int TABLES = 2;
    static final int BITS = 2;
    static final int DIM = 3;

    /** A valid payload: 3 labels, 2 tables of 2 bits over 3-d embeddings, with a check text. */
    static Map<String, Object> payload() {
        Map<String, Object> p = new LinkedHashMap<>();
        p.put("labels", list("alarm", "music", "weather"));
        p.put("label_descriptions", list("alarms and timers", "play music", "the weather"));
        Map<String, Object> privacy = new LinkedHashMap<>();
        privacy.put("epsilon", 8.0);
        privacy.put("delta", 0.0);
        privacy.put("mechanism", "discrete Laplace noise on every cell");
        privacy.put("sensitivity_l1", (long) TABLES);
        privacy.put("noise_scale", TABLES / 8.0);
        privacy.put("neighbour_relation", "add or remove one record");
        privacy.put("privacy_unit", "one record");
        privacy.put("noise_source", "test");
        privacy.put("released_statistics", list("votes"));
        p.put("privacy", privacy);
        Map<String, Object> lsh = new LinkedHashMap<>();
        lsh.put("family", "simhash");
        lsh.put("tables", (long) TABLES);
        lsh.put("bits", (long) BITS);
        lsh.put("dim", (long) DIM);
        lsh.put("seed", new BigInteger("18446744073709551615"));  // uint64 max: must still load
        lsh.put("distribution", "gaussian");
        // table 0: axes x, y; table 1: axes z, -x
        lsh.put("hyperplanes", array("<f4", floats(1, 0, 0, 0, 1, 0, 0, 0, 1, -1, 0, 0), TABLES, BITS, DIM));
        p.put("lsh", lsh);
        short[] votes = new short[TABLES * 4 * 3];
        for (int i = 0; i < votes.length; i++) {
            votes[i] = (short) (i % 7 - 3);
        }
        votes[5] = -32768;
        votes[6] = 32767;
        p.put("votes", array("<i2", shorts(votes), TABLES, 4, 3));
        Map<String, Object> enc = new LinkedHashMap<>();
        enc.put("format", "onnx");
        enc.put("model", TINY_ONNX.clone());
        enc.put("tokenizer_json", TOKENIZER_JSON);
        enc.put("max_length", 16L);
        enc.put("dim", (long) DIM);
        enc.put("pooling", "mean");
        enc.put("normalized", true);
        enc.put("inputs", list("input_ids", "attention_mask"));
        enc.put("output", "sentence_embedding");
        enc.put("facts", new LinkedHashMap<String, Object>());
        Map<String, Object> check = new LinkedHashMap<>();
        check.put("text", "wake me up");
        check.put("embedding", array("<f4", floats(0.6f, 0.8f, 0f), DIM));
        enc.put("check", check);
        p.put("encoder", enc);
        Map<String, Object> exporter = new LinkedHashMap<>();
        exporter.put("name", "dpedge");
        exporter.put("version", "0.1.0");
        exporter.put("created", "2026-01-01T00:00:00+00:00");
        p.put("exporter", exporter);
        return p;
    }

    /**
     * A valid format-2 payload: {@link #payload()} plus offsets, class statistics in a 2-d
     * subspace (the x and y axes), a prior, a scoring map and the releases.
     */
    static Map<String, Object> payload2() {
        Map<String, Object> p = payload();
        sub(p, "lsh").put("offsets", array("<f4", floats(0.1f, -0.2f, 0f, 0.3f), TABLES, BITS));
        Map<String, Object> cs = new LinkedHashMap<>();
        cs.put("origin", array("<f4", floats(0.05f, 0f, -0.05f), DIM));
        cs.put("projection", array("<f4", floats(1, 0, 0, 0, 1, 0), 2, DIM));
        cs.put("sums", array("<f4", floats(8f, 1f, -2f, 6f, 0.5f, -4f), 3, 2));
        cs.put("counts", array("<f4", floats(10f, 7f, 0.4f), 3));
        p.put("class_stats", cs);
        Map<String, Object> prior = new LinkedHashMap<>();
        prior.put("embeddings", array("<f4", floats(1, 0, 0, 0, 1, 0, 0, 0.6f, 0.8f), 3, DIM));
        prior.put("source", "the label descriptions");
        p.put("prior", prior);
        Map<String, Object> scoring = new LinkedHashMap<>();
        scoring.put("votes", 1.0);
        scoring.put("centroids", 1.0);
        scoring.put("prior", 1.0);
        scoring.put("centroid_temperature", 0.05);
        scoring.put("prior_temperature", 0.05);
        scoring.put("rule", "see runtime/scoring.py");
        p.put("scoring", scoring);
        Map<String, Object> stats = new LinkedHashMap<>();
        stats.put("statistic", "class_stats");
        stats.put("epsilon", 6.4);
        stats.put("mechanism", "discrete Laplace");
        stats.put("sensitivity_l1", 400L);
        stats.put("noise_scale", 62.5);
        Map<String, Object> votes = new LinkedHashMap<>();
        votes.put("statistic", "votes");
        votes.put("epsilon", 1.6);
        votes.put("mechanism", "discrete Laplace");
        votes.put("sensitivity_l1", (long) TABLES);
        votes.put("noise_scale", TABLES / 1.6);
        sub(p, "privacy").put("releases", list(stats, votes));
        sub(p, "privacy").put("noise_scale", TABLES / 1.6);  // the top level states the votes release's facts
        return p;
    }

    /**
     * A valid format-3.0 payload without vote tables, as the exporter writes by default:
     * {@link #payload2()} without {@code lsh} and {@code votes}, the class statistics released as
     * class counts (epsilon 0.4, sensitivity 1) then class sums (epsilon 7.6, sensitivity 400),
     * the top level stating the sums release's facts, and format 3.0's scoring map (the
     * "cosine_public" rule at 0.04, the "linear" boost with R = 100).
     */
    static Map<String, Object> payload3() {
        Map<String, Object> p = payload2();
        p.remove("lsh");
        p.remove("votes");
        Map<String, Object> privacy = sub(p, "privacy");
        privacy.put("released_statistics", list("class_counts", "class_sums"));
        privacy.put("releases", list(release("class_counts", 0.4, 1L), release("class_sums", 7.6, 400L)));
        privacy.put("sensitivity_l1", 400L);
        privacy.put("noise_scale", 400 / 7.6);
        privacy.put("max_records_per_unit", 1L);
        Map<String, Object> scoring = sub(p, "scoring");
        scoring.put("centroid_temperature", 0.04);
        scoring.put("centroid_rule", "cosine_public");
        scoring.put("centroid_clip_l1", 0.0);
        scoring.put("prior_records_per_class", 100.0);
        scoring.put("prior_boost_rule", "linear");
        return p;
    }

    /**
     * A valid format-3.0 payload with vote tables ({@code --votes-share}): {@link #payload3()}
     * plus {@link #payload()}'s hashing and votes with {@link #payload2()}'s offsets, and a third
     * release, the votes' (epsilon 0.8: the sums keep 6.8), whose facts the top level states.
     */
    static Map<String, Object> payload3Tables() {
        Map<String, Object> p = payload3();
        Map<String, Object> plain = payload2();
        p.put("lsh", plain.get("lsh"));
        p.put("votes", plain.get("votes"));
        Map<String, Object> privacy = sub(p, "privacy");
        privacy.put("released_statistics", list("class_counts", "class_sums", "votes"));
        privacy.put("releases", list(release("class_counts", 0.4, 1L), release("class_sums", 6.8, 400L),
                release("votes", 0.8, (long) TABLES)));
        privacy.put("sensitivity_l1", (long) TABLES);
        privacy.put("noise_scale", TABLES / 0.8);
        return p;
    }

    /** One {@code privacy.releases} entry with a consistent noise scale (sensitivity / epsilon). */
    static Map<String, Object> release(String statistic, double epsilon, long sensitivity) {
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("statistic", statistic);
        r.put("epsilon", epsilon);
        r.put("mechanism", "discrete Laplace");
        r.put("sensitivity_l1", sensitivity);
        r.put("noise_scale", sensitivity / epsilon);
        return r;
    }

    /** A sealed format-3 bundle (version [3, 0]) of a payload. */
    static byte[] seal3(Map<String, Object> payload) {
        Map<String, Object> o = outer(pack(payload));
        o.put("version", list(3L, 0L));
        return pack(o);
    }

    /** A sealed format-2 bundle (version [2, 0]) of a payload. */
    static byte[] seal2(Map<String, Object> payload) {
        Map<String, Object> o = outer(pack(payload));
        o.put("version", list(2L, 0L));
        return pack(o);
    }

    /** The outer map around a payload, with a correct checksum. */
    static Map<String, Object> outer(byte[] body) {
        Map<String, Object> o = new LinkedHashMap<>();
        o.put("format", "dpedge-bundle");
        o.put("version", list(1L, 1L));
        Map<String, Object> checksum = new LinkedHashMap<>();
        checksum.put("algorithm", "sha256");
        checksum.put("digest", sha256(body));
        o.put("checksum", checksum);
        o.put("payload", body);
        return o;
    }

    static byte[] seal(Map<String, Object> payload) {
        return pack(outer(pack(payload)));
    }

    static byte[] validBundle() {
        return seal(payload());
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> sub(Map<String, Object> m, String dotted) {
        for (String key : dotted.split("\\.")) {
            m = (Map<String, Object>) m.get(key);
        }
        return m;
    }

    static Map<String, Object> array(String dtype, byte[] data, long... shape) {
        Map<String, Object> a = new LinkedHashMap<>();
        a.put("dtype", dtype);
        List<Object> s = new ArrayList<>();
        for (long d : shape) {
            s.add(d);
        }
        a.put("shape", s);
        a.put("data", data);
        return a;
    }

    static byte[] floats(float... v) {
        ByteBuffer b = ByteBuffer.allocate(v.length * 4).order(ByteOrder.LITTLE_ENDIAN);
        for (float x : v) {
            b.putFloat(x);
        }
        return b.array();
    }

    static byte[] shorts(short... v) {
        ByteBuffer b = ByteBuffer.allocate(v.length * 2).order(ByteOrder.LITTLE_ENDIAN);
        for (short x : v) {
            b.putShort(x);
        }
        return b.array();
    }

    static List<Object> list(Object... items) {
        return new ArrayList<>(Arrays.asList(items));
    }

    static byte[] sha256(byte[] data) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(data);
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }

    /** Packs nested Maps, Lists, Strings, byte[], Long/Integer, BigInteger, Double, Boolean and null. */
    static byte[] pack(Object value) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (MessagePacker p = MessagePack.newDefaultPacker(out)) {
            pack(p, value);
        } catch (IOException e) {
            throw new AssertionError(e);
        }
        return out.toByteArray();
    }

    private static void pack(MessagePacker p, Object v) throws IOException {
        if (v == null) {
            p.packNil();
        } else if (v instanceof Boolean) {
            p.packBoolean((Boolean) v);
        } else if (v instanceof Long || v instanceof Integer) {
            p.packLong(((Number) v).longValue());
        } else if (v instanceof BigInteger) {
            p.packBigInteger((BigInteger) v);
        } else if (v instanceof Double) {
            p.packDouble((Double) v);
        } else if (v instanceof String) {
            p.packString((String) v);
        } else if (v instanceof byte[]) {
            byte[] b = (byte[]) v;
            p.packBinaryHeader(b.length);
            p.writePayload(b);
        } else if (v instanceof List) {
            List<?> l = (List<?>) v;
            p.packArrayHeader(l.size());
            for (Object x : l) {
                pack(p, x);
            }
        } else if (v instanceof Map) {
            Map<?, ?> m = (Map<?, ?>) v;
            p.packMapHeader(m.size());
            for (Map.Entry<?, ?> e : m.entrySet()) {
                pack(p, e.getKey());
                pack(p, e.getValue());
            }
        } else {
            throw new IllegalArgumentException("cannot pack " + v.getClass());
        }
    }
}
