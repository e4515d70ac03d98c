package org.dpedge.core;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.msgpack.core.MessageBufferPacker;
import org.msgpack.core.MessagePack;
import org.msgpack.core.MessageUnpacker;
import org.msgpack.value.Value;

/**
 * Small bundles of format 1.0 for the unit tests: a document as nested Java maps that a test can
 * edit, then packed and sealed as runtime/bundle/writer.py does (the digest entry last, over
 * every byte before it). The golden tests use real bundles; these keep each unit test to the one
 * thing it checks.
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
     * The smallest ONNX model inside the encoder family (ModelFamily): IR 8, opset 18, a graph of
     * one Cast node (input_ids to sentence_embedding), and the given initializers. The reader
     * checks its structure; the tests' encoders are stand-ins, so nothing runs it.
     */
    static byte[] tinyOnnx(byte[]... initializers) {
        byte[] node = concat(pb(1, "input_ids"), pb(2, "sentence_embedding"), pb(4, "Cast"));
        byte[] graph = pb(1, node);
        for (byte[] tensor : initializers) {
            graph = concat(graph, pb(5, tensor));
        }
        return concat(pb(1, 8), pb(8, pb(2, 18)), pb(7, graph));
    }

    static final byte[] TINY_ONNX = tinyOnnx();

    /** A uint8 TensorProto [length] whose data is {@code length} bytes at {@code offset} of encoder.weights. */
    static byte[] externalTensor(String name, long offset, long length) {
        byte[][] entries = new byte[3][];
        String[][] kv = {{"location", Bundle.Encoder.WEIGHTS_LOCATION}, {"offset", String.format("%020d", offset)},
            {"length", String.format("%020d", length)}};
        for (int i = 0; i < 3; i++) {
            entries[i] = pb(13, concat(pb(1, kv[i][0]), pb(2, kv[i][1])));
        }
        return concat(pb(1, length), pb(2, 2), pb(8, name), concat(entries), pb(14, 1));
    }

    private static byte[] varint(long n) {
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
        do {
            out.write((int) (n & 0x7f) | (n > 0x7f ? 0x80 : 0));
            n >>>= 7;
        } while (n != 0);
        return out.toByteArray();
    }

    /** A protobuf field: a varint, or a length-delimited string or message. */
    static byte[] pb(int number, Object value) {
        if (value instanceof Number) {
            return concat(varint((long) number << 3), varint(((Number) value).longValue()));
        }
        byte[] raw = value instanceof String ? ((String) value).getBytes(StandardCharsets.UTF_8) : (byte[]) value;
        return concat(varint((long) number << 3 | 2), varint(raw.length), raw);
    }

    static byte[] concat(byte[]... parts) {
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
        for (byte[] p : parts) {
            out.write(p, 0, p.length);
        }
        return out.toByteArray();
    }

    static final int TABLES = 2;
    static final int BITS = 2;
    static final int DIM = 3;
    static final int K = 2;

    /**
     * A valid document: 3 labels with descriptions, epsilon 8 spent as 1 (counts), 6 (sums) and 1
     * (votes), a 2-d subspace of 3-d embeddings, 2 vote tables of 2 bits with offsets, the prior,
     * the scoring constants, and the tiny ONNX encoder (no external data, empty weights).
     */
    static Map<String, Object> document() {
        Map<String, Object> d = new LinkedHashMap<>();
        d.put("format", "dpedge");
        d.put("version", list(1L, 0L));
        d.put("labels", list("alarm", "music", "weather"));
        d.put("label_descriptions", list("alarms and timers", "play music", "the weather"));
        d.put("privacy", map("epsilon", 8.0, "delta", 0.0, "max_records_per_unit", 1L,
                "neighbour_relation", "add or remove one record", "privacy_unit", "one record",
                "noise_source", "test", "public_inputs", list("hyperplanes")));
        Map<String, Object> releases = new LinkedHashMap<>();
        releases.put("class_counts", release(1.0, 1, array("<i4", ints(5, 3, 2), 3)));
        Map<String, Object> sums = release(6.0, 200, array("<i4", ints(100, 0, 0, 100, -100, -100), 3, K));
        sums.put("grid", 100L);
        sums.put("clip_l1", 2.0);
        sums.put("values", sums.remove("values"));
        releases.put("class_sums", sums);
        short[] votes = new short[TABLES * 4 * 3];
        for (int i = 0; i < votes.length; i++) {
            votes[i] = (short) (i % 7 - 3);
        }
        releases.put("votes", release(1.0, TABLES, array("<i2", shorts(votes), TABLES, 4, 3)));
        d.put("releases", releases);
        d.put("subspace", map("origin", array("<f4", floats(0.1f, 0, 0), DIM),
                "projection", array("<f4", floats(1, 0, 0, 0, 1, 0), K, DIM)));
        // table 0: axes x, y; table 1: axes z, -x
        d.put("hashing", map("hyperplanes", array("<f4", floats(1, 0, 0, 0, 1, 0, 0, 0, 1, -1, 0, 0), TABLES, BITS, DIM),
                "offsets", array("<f4", floats(0, 0.1f, 0, 0), TABLES, BITS), "seed", 7L));
        d.put("prior", array("<f4", floats(1, 0, 0, 0, 1, 0, 0, 0, 1), 3, DIM));
        d.put("scoring", map("centroid_temperature", 0.04, "prior_temperature", 0.05,
                "prior_records_per_class", 100.0, "description_pull", 0.5));
        d.put("exporter", map("name", "dpedge", "version", "0.1.0"));
        d.put("encoder", map("format", "onnx", "model", TINY_ONNX.clone(), "tokenizer_json", TOKENIZER_JSON,
                "max_length", 16L, "dim", (long) DIM, "text_prefix", "", "inputs", list("input_ids", "attention_mask"),
                "output", "sentence_embedding", "check_text", "wake me up",
                "check_embedding", array("<f4", floats(0.6f, 0.8f, 0f), DIM), "weights", new byte[0]));
        return d;
    }

    private static Map<String, Object> release(double epsilon, long sensitivity, Map<String, Object> values) {
        return map("epsilon", epsilon, "sensitivity_l1", sensitivity, "noise_scale", sensitivity / epsilon,
                "mechanism", "discrete Laplace noise", "values", values);
    }

    /** A document's file: its entries, then the digest entry over every byte before it. */
    static byte[] seal(Map<String, Object> doc) {
        try {
            MessageBufferPacker p = MessagePack.newDefaultBufferPacker();
            p.packMapHeader(doc.size() + 1);
            for (Map.Entry<String, Object> e : doc.entrySet()) {
                write(p, e.getKey());
                write(p, e.getValue());
            }
            byte[] head = p.toByteArray();
            byte[] digest = MessageDigest.getInstance("SHA-256").digest(head);
            byte[] out = Arrays.copyOf(head, head.length + 41);
            byte[] tail = {(byte) 0xa6, 's', 'h', 'a', '2', '5', '6', (byte) 0xc4, 0x20};
            System.arraycopy(tail, 0, out, head.length, tail.length);
            System.arraycopy(digest, 0, out, head.length + tail.length, 32);
            return out;
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    /** msgpack of a value: a Float as float32, a Double as float64, an Object[][] as a map of pairs (keys may repeat). */
    static byte[] pack(Object v) {
        try {
            MessageBufferPacker p = MessagePack.newDefaultBufferPacker();
            write(p, v);
            return p.toByteArray();
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    private static void write(MessageBufferPacker p, Object v) throws IOException {
        if (v == null) {
            p.packNil();
        } else if (v instanceof String) {
            p.packString((String) v);
        } else if (v instanceof byte[]) {
            p.packBinaryHeader(((byte[]) v).length).writePayload((byte[]) v);
        } else if (v instanceof Boolean) {
            p.packBoolean((Boolean) v);
        } else if (v instanceof Float) {
            p.packFloat((Float) v);
        } else if (v instanceof Double) {
            p.packDouble((Double) v);
        } else if (v instanceof Number) {
            p.packLong(((Number) v).longValue());
        } else if (v instanceof List) {
            p.packArrayHeader(((List<?>) v).size());
            for (Object x : (List<?>) v) {
                write(p, x);
            }
        } else if (v instanceof Object[][]) {
            p.packMapHeader(((Object[][]) v).length);
            for (Object[] pair : (Object[][]) v) {
                write(p, pair[0]);
                write(p, pair[1]);
            }
        } else {
            Map<?, ?> m = (Map<?, ?>) v;
            p.packMapHeader(m.size());
            for (Map.Entry<?, ?> e : m.entrySet()) {
                write(p, e.getKey());
                write(p, e.getValue());
            }
        }
    }

    /** Any msgpack file (golden.msgpack) as Java values: maps, lists, String, byte[], Long, Double, Boolean. */
    static Object unpack(byte[] data) throws IOException {
        try (MessageUnpacker u = MessagePack.newDefaultUnpacker(data)) {
            return plain(u.unpackValue());
        }
    }

    private static Object plain(Value v) {
        switch (v.getValueType()) {
            case NIL: return null;
            case BOOLEAN: return v.asBooleanValue().getBoolean();
            case INTEGER: return v.asIntegerValue().isInLongRange() ? (Object) v.asIntegerValue().toLong()
                    : v.asIntegerValue().toBigInteger();
            case FLOAT: return v.asFloatValue().toDouble();
            case STRING: return v.asStringValue().asString();
            case BINARY: return v.asBinaryValue().asByteArray();
            case ARRAY: {
                List<Object> out = new ArrayList<>();
                for (Value x : v.asArrayValue()) {
                    out.add(plain(x));
                }
                return out;
            }
            default: {
                Map<String, Object> out = new LinkedHashMap<>();
                for (Map.Entry<Value, Value> e : v.asMapValue().entrySet()) {
                    out.put(e.getKey().asStringValue().asString(), plain(e.getValue()));
                }
                return out;
            }
        }
    }

    // ------------------------------------------------------------------ editing documents

    @SuppressWarnings("unchecked")
    static Object get(Map<String, Object> doc, String path) {
        Object node = doc;
        for (String key : path.split("\\.")) {
            node = ((Map<String, Object>) node).get(key);
        }
        return node;
    }

    /** Sets a field (a new key goes last in its map). */
    @SuppressWarnings("unchecked")
    static void put(Map<String, Object> doc, String path, Object value) {
        int dot = path.lastIndexOf('.');
        Map<String, Object> parent = dot < 0 ? doc : (Map<String, Object>) get(doc, path.substring(0, dot));
        parent.put(path.substring(dot + 1), value);
    }

    @SuppressWarnings("unchecked")
    static void drop(Map<String, Object> doc, String path) {
        int dot = path.lastIndexOf('.');
        Map<String, Object> parent = dot < 0 ? doc : (Map<String, Object>) get(doc, path.substring(0, dot));
        parent.remove(path.substring(dot + 1));
    }

    /** The encoder map moved back to the end of the document (put adds keys last). */
    static Map<String, Object> encoderLast(Map<String, Object> doc) {
        doc.put("encoder", doc.remove("encoder"));
        return doc;
    }

    static Bundle read(Map<String, Object> doc) throws BundleException {
        return BundleReader.read(seal(doc));
    }

    /** The message of the reader's refusal of a document (fails if it is accepted). */
    static String refusal(Map<String, Object> doc) {
        try {
            read(doc);
        } catch (BundleException e) {
            return e.getMessage();
        }
        throw new AssertionError("the reader accepted the document");
    }

    // ------------------------------------------------------------------ values

    static Map<String, Object> map(Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            m.put((String) kv[i], kv[i + 1]);
        }
        return m;
    }

    static List<Object> list(Object... items) {
        return new ArrayList<>(Arrays.asList(items));
    }

    static Map<String, Object> array(String dtype, byte[] data, long... shape) {
        List<Object> s = new ArrayList<>();
        for (long n : shape) {
            s.add(n);
        }
        return map("dtype", dtype, "shape", s, "data", data);
    }

    static byte[] floats(float... v) {
        ByteBuffer b = ByteBuffer.allocate(4 * v.length).order(ByteOrder.LITTLE_ENDIAN);
        for (float x : v) {
            b.putFloat(x);
        }
        return b.array();
    }

    static byte[] ints(int... v) {
        ByteBuffer b = ByteBuffer.allocate(4 * v.length).order(ByteOrder.LITTLE_ENDIAN);
        for (int x : v) {
            b.putInt(x);
        }
        return b.array();
    }

    static byte[] shorts(short... v) {
        ByteBuffer b = ByteBuffer.allocate(2 * v.length).order(ByteOrder.LITTLE_ENDIAN);
        for (short x : v) {
            b.putShort(x);
        }
        return b.array();
    }
}
