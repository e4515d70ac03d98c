package org.dpedge.core;

import java.io.File;
import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.Deque;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.dpedge.core.Fields.Field;

/**
 * Reads a bundle of format 1.0 ({@code docs/bundle-format.md}); anything else is refused with
 * one {@link BundleException}, in the words of the Python reader ({@code runtime/bundle/reader.py}).
 *
 * <p>Why a port of that reader rather than a looser one: a phone must refuse exactly the files
 * a laptop refuses, or a file broken on one platform would be "fine" on another. The order is
 * Python's: the container (the digest over every byte before the last 41, then one msgpack map
 * under the rules of {@link Msgpack}, its first entries {@code format} and {@code version}, its
 * last {@code sha256}); the version (major 1, any minor); every row of the format's table
 * ({@link Fields}) in the table's order; keys the table does not know; {@code requires}; the
 * relations; the tokenizer and model families. A pre-release file (formats 0.x to 4.0, whose
 * first entry is {@code format: "dpedge-bundle"} and which ends without the digest entry) is
 * refused in one line naming its version.
 */
public final class BundleReader {
    static final String FORMAT_NAME = "dpedge";
    static final int MAJOR = 1;
    static final int MINOR = 0;
    static final String PRE_RELEASE_NAME = "dpedge-bundle";
    /** The file ends with the key "sha256" (a 7-byte fixstr), a bin8 header of 32, the digest. */
    static final byte[] DIGEST_TAIL = {(byte) 0xa6, 's', 'h', 'a', '2', '5', '6', (byte) 0xc4, 0x20};
    static final int TAIL_BYTES = DIGEST_TAIL.length + 32;
    /** The largest array a JVM holds, and so the largest bundle. */
    static final long MAX_BUNDLE_BYTES = Integer.MAX_VALUE - 8;
    static final String CORRUPTED = "checksum mismatch: the bundle is corrupted (its bytes changed after it was written)";

    private BundleReader() {
    }

    /**
     * Reads a bundle file; messages start with its path, like Python's. (java.io: Android has
     * java.nio.file only from API 26.)
     */
    public static Bundle read(File file) throws BundleException {
        if (file.isDirectory()) {
            throw new BundleException(file + ": is a directory, not a bundle file");
        }
        if (!file.exists()) {
            throw new BundleException(file + ": no such bundle file");
        }
        long size = file.length();
        if (size > MAX_BUNDLE_BYTES) {
            throw new BundleException(file + ": " + size + " bytes is larger than any bundle (" + MAX_BUNDLE_BYTES + " max)");
        }
        byte[] data = new byte[(int) size];
        try (InputStream in = new FileInputStream(file)) {
            int n = 0;
            for (int r; n < data.length && (r = in.read(data, n, data.length - n)) >= 0; ) {
                n += r;
            }
            if (n < data.length || in.read() >= 0) {
                throw new BundleException(file + ": cannot read bundle: the file changed while it was read");
            }
        } catch (IOException e) {  // FileNotFoundException included: no permission, say
            throw new BundleException(file + ": cannot read bundle: " + Text.escape(String.valueOf(e.getMessage())), e);
        }
        try {
            return read(data);
        } catch (BundleException e) {
            throw new BundleException(file + ": " + e.getMessage(), e);
        }
    }

    /** Parses and validates bundle bytes (kept: the encoder's weights are a view of them). */
    public static Bundle read(byte[] data) throws BundleException {
        Map<String, Object> doc = parse(data);
        int minor = version(doc);
        return decode(doc, minor);
    }

    // ------------------------------------------------------------------ the container

    @SuppressWarnings("unchecked")
    static Map<String, Object> parse(byte[] data) throws BundleException {
        if (data.length > MAX_BUNDLE_BYTES) {
            throw new BundleException(data.length + " bytes is larger than any bundle (" + MAX_BUNDLE_BYTES + " max)");
        }
        int body = data.length - TAIL_BYTES;
        if (body < 0 || !Arrays.equals(data, body, body + DIGEST_TAIL.length, DIGEST_TAIL, 0, DIGEST_TAIL.length)) {
            throw new BundleException(unsealed(data));
        }
        try {
            MessageDigest md = MessageDigest.getInstance("SHA-256");
            md.update(data, 0, body);
            if (!MessageDigest.isEqual(md.digest(), Arrays.copyOfRange(data, data.length - 32, data.length))) {
                throw new BundleException(CORRUPTED);
            }
        } catch (NoSuchAlgorithmException e) {
            throw new BundleException("this Java runtime has no SHA-256", e);
        }
        Object doc = Msgpack.parse(data, 0, data.length);
        if (!(doc instanceof Map)) {
            throw new BundleException("not a dpedge bundle (its top level is " + Msgpack.kind(doc) + ", expected a map)");
        }
        List<String> keys = new ArrayList<>(((Map<String, Object>) doc).keySet());
        if (keys.size() < 2 || !keys.get(0).equals("format") || !keys.get(1).equals("version")
                || !keys.get(keys.size() - 1).equals("sha256")) {
            throw new BundleException("a bundle's map starts with 'format' and 'version' and ends with 'sha256', got "
                    + Text.show(keys.subList(0, Math.min(2, keys.size()))) + " ... " + Text.show(keys.get(keys.size() - 1)));
        }
        return (Map<String, Object>) doc;
    }

    /** Why a file that does not end with its digest entry is refused: pre-release, truncated, or no bundle. */
    private static String unsealed(byte[] data) {
        List<Object> first = Msgpack.head(data, 4);
        if (first == null) {
            return "not a dpedge bundle (it does not start with a msgpack map)";
        }
        if ("format".equals(first.get(0)) && PRE_RELEASE_NAME.equals(first.get(1))) {
            List<String> v = new ArrayList<>(Arrays.asList("?", "?"));
            Object version = first.get(3);
            if (version instanceof List
                    && ((List<?>) version).stream().allMatch(x -> x instanceof Long || x instanceof BigInteger)) {
                v.clear();
                for (Object x : (List<?>) version) {
                    v.add(x.toString());
                }
            }
            return "this bundle uses the pre-release format " + String.join(".", v.subList(0, Math.min(2, v.size())))
                    + ", which dpedge 1.x does not read: rebuild it with `python -m exporter build` (a new release of "
                    + "the data: its epsilon adds to the old bundle's if both are used)";
        }
        if ("format".equals(first.get(0)) && FORMAT_NAME.equals(first.get(1))) {
            return "the bundle is truncated or corrupted: it does not end with its 'sha256' entry";
        }
        return "not a dpedge bundle (its first entry is not format: dpedge)";
    }

    /** The minor version, if the major is 1. */
    private static int version(Map<String, Object> doc) throws BundleException {
        Object format = doc.get("format");
        if (!FORMAT_NAME.equals(format)) {
            throw new BundleException("not a dpedge bundle: field 'format' is " + Text.show(format) + ", expected '"
                    + FORMAT_NAME + "'");
        }
        Object v = doc.get("version");
        boolean ok = v instanceof List && ((List<?>) v).size() == 2;
        for (Object x : ok ? (List<?>) v : Collections.emptyList()) {
            ok &= x instanceof Long && (Long) x >= 0 && (Long) x < (1L << 31);
        }
        if (!ok) {
            throw new BundleException("field 'version' must be [major, minor], got " + Text.show(v));
        }
        long major = (Long) ((List<?>) v).get(0);
        long minor = (Long) ((List<?>) v).get(1);
        if (major != MAJOR) {
            throw new BundleException("bundle format version " + major + "." + minor
                    + " is not 1.x, the only format dpedge reads");
        }
        return (int) minor;
    }

    // ------------------------------------------------------------------ the table

    private static BundleException fail(String path, String why) {
        return new BundleException("field '" + path + "' " + why);
    }

    /** Every row of the table checked against the document; the present fields by path (arrays decoded). */
    private static Map<String, Object> fields(Map<String, Object> doc, boolean newerMinor, Map<String, Integer> dims)
            throws BundleException {
        Map<String, Object> values = new LinkedHashMap<>();
        values.put("", doc);
        dims.put("C", doc.get("labels") instanceof List ? ((List<?>) doc.get("labels")).size() : 0);
        for (Field f : Fields.FIELDS) {
            Map<?, ?> parent = (Map<?, ?>) values.get(f.parent());
            if (parent == null) {  // the parent map is absent
                continue;
            }
            boolean present = parent.containsKey(f.key());
            if (f.need.startsWith("iff ")) {
                String condition = f.need.substring(4);
                boolean wanted = Fields.holds(condition, doc);
                if (present != wanted) {
                    throw fail(f.path, "must be present exactly when " + Fields.CONDITIONS.get(condition));
                }
                if (!wanted) {
                    continue;
                }
            } else if (!present) {
                if (f.need.equals("required")) {
                    throw new BundleException("missing field '" + f.path + "'");
                }
                continue;
            }
            Object value = value(f, parent.get(f.key()), dims);
            values.put(f.path, value);
            if (f.path.equals("encoder.dim")) {
                int d = (int) (long) (Long) value;
                if (dims.putIfAbsent("D", d) != null && dims.get("D") != d) {
                    throw fail(f.path, "is " + d + ", but the arrays before it are " + dims.get("D") + "-d");
                }
            }
        }
        for (Map.Entry<String, Object> e : values.entrySet()) {
            Field f = Fields.BY_PATH.get(e.getKey());
            if (f != null && (!f.kind.equals("map") || f.open)) {
                continue;
            }
            Set<String> known = new HashSet<>();
            for (Field g : Fields.FIELDS) {
                if (g.parent().equals(e.getKey())) {
                    known.add(g.key());
                }
            }
            for (Object key : ((Map<?, ?>) e.getValue()).keySet()) {
                if (known.contains(key)) {
                    continue;
                }
                String path = e.getKey().isEmpty() ? (String) key : e.getKey() + "." + key;
                if (e.getKey().equals("releases")) {
                    throw fail(Text.escape(path), "is a release this reader cannot account for");
                }
                if (!newerMinor) {
                    throw new BundleException("unknown field '" + Text.escape(path) + "' in a version " + MAJOR + "."
                            + MINOR + " bundle");
                }
            }
        }
        return values;
    }

    /** For each kind of the table: the msgpack type it must have, and how a message names it. */
    private static final Map<String, String[]> KINDS = Map.of("map", new String[] {"map", "map"},
            "str", new String[] {"string", "string"}, "int", new String[] {"integer", "integer"},
            "float", new String[] {"float", "float"}, "bin", new String[] {"bin", "bin"},
            "version", new String[] {"array", "array"}, "strings", new String[] {"array", "an array of strings"});

    /** One field's value checked against its row (an array record becomes a Java array). */
    private static Object value(Field f, Object v, Map<String, Integer> dims) throws BundleException {
        if (f.kind.equals("ndarray")) {
            return array(f, v, dims);
        }
        String[] kind = KINDS.get(f.kind);
        if (!Msgpack.kind(v).equals(kind[0])) {
            throw fail(f.path, "is " + Msgpack.kind(v) + ", expected " + kind[1]);
        }
        if (f.kind.equals("float") && (((Double) v).isNaN() || ((Double) v).isInfinite())) {
            throw fail(f.path, "is " + Text.pyFloat((Double) v) + ", not a finite number");
        }
        if (f.kind.equals("int") || f.kind.equals("float")) {
            bounded(f, v, "is");
        } else if (f.kind.equals("str")) {
            bounded(f, (long) Text.length((String) v), "has length");
        } else if (f.kind.equals("bin")) {
            bounded(f, (long) ((Msgpack.Bin) v).length, "has length");
        } else if (f.kind.equals("strings")) {
            bounded(f, (long) ((List<?>) v).size(), "has length");
        }
        if (f.kind.equals("str")) {
            text(f, f.path, (String) v);
            if (!f.choices.isEmpty() && !f.choices.contains(v)) {
                List<String> shown = new ArrayList<>();
                for (String c : f.choices) {
                    shown.add(Text.reprString(c));
                }
                throw fail(f.path, "is " + Text.show(v) + ", expected one of " + String.join(", ", shown));
            }
        }
        if (f.kind.equals("strings")) {
            List<?> items = (List<?>) v;
            for (int i = 0; i < items.size(); i++) {
                if (!(items.get(i) instanceof String)) {
                    throw fail(f.path + "[" + i + "]", "is " + Msgpack.kind(items.get(i)) + ", expected string");
                }
                text(f, f.path + "[" + i + "]", (String) items.get(i));
            }
            if (!f.choices.isEmpty() && (new HashSet<>(items).size() != items.size() || !f.choices.containsAll(items))) {
                throw fail(f.path, "must hold distinct names of " + String.join(", ", f.choices) + ", got " + Text.show(v));
            }
        }
        if (f.open) {
            informational(f, v);
        }
        return v;
    }

    /** An open map holds nil, booleans, integers, finite floats, strings, arrays and maps only. */
    private static void informational(Field f, Object v) throws BundleException {
        Deque<Object> stack = new ArrayDeque<>();
        stack.push(v);
        while (!stack.isEmpty()) {
            Object x = stack.pop();
            if (x instanceof Msgpack.Bin) {
                throw fail(f.path, "holds binary data, which informational fields may not");
            }
            if (x instanceof Double && (((Double) x).isNaN() || ((Double) x).isInfinite())) {
                throw fail(f.path, "holds " + Text.pyFloat((Double) x) + ", not a finite number");
            }
            if (x instanceof Map) {
                ((Map<?, ?>) x).values().forEach(stack::push);
            } else if (x instanceof List) {
                ((List<?>) x).forEach(stack::push);
            }
        }
    }

    private static void bounded(Field f, Object x, String what) throws BundleException {
        if ((f.low != null && Text.compare(x, f.low) < 0) || (f.high != null && Text.compare(x, f.high) > 0)) {
            throw fail(f.path, what + " " + Text.show(x) + ", expected " + Text.num(f.low) + " to " + Text.num(f.high));
        }
    }

    /**
     * Text rules: an item's length, no unprintable code point where the row asks for printable
     * text, and labels and descriptions that show something.
     */
    private static void text(Field f, String where, String s) throws BundleException {
        boolean strings = f.kind.equals("strings");
        Integer most = "label".equals(f.text) ? Integer.valueOf(Fields.MAX_LABEL_CHARS)
                : "description".equals(f.text) ? Integer.valueOf(Fields.MAX_DESCRIPTION_CHARS)
                : strings ? Integer.valueOf((int) Fields.MAX_TEXT_CHARS) : null;
        if (most != null && Text.length(s) > most) {
            throw fail(where, "has " + Text.length(s) + " characters, more than " + most);
        }
        int bad = f.text != null || strings ? Text.unprintable(s) : -1;
        if (bad >= 0) {
            throw fail(where, "holds " + Text.uPlus(bad) + ", which is not printable");
        }
        if (("label".equals(f.text) || "description".equals(f.text)) && Text.isBlank(Text.fold(s))) {
            throw fail(where, "shows nothing (it is empty once invisible characters are removed)");
        }
    }

    /** An array record: exactly dtype, shape and data; the shape's symbols agreeing; finite floats. */
    private static Object array(Field f, Object v, Map<String, Integer> dims) throws BundleException {
        if (!(v instanceof Map)) {
            throw fail(f.path, "is " + Msgpack.kind(v) + ", expected an array record (map of dtype, shape, data)");
        }
        Map<?, ?> record = (Map<?, ?>) v;
        if (!record.keySet().equals(new HashSet<>(Arrays.asList("dtype", "shape", "data")))) {
            List<String> keys = new ArrayList<>();
            for (Object k : record.keySet()) {
                keys.add((String) k);
            }
            Collections.sort(keys);
            throw fail(f.path, "must have exactly the keys dtype, shape and data, got " + Text.show(keys));
        }
        Object dtype = record.get("dtype");
        Object shapeValue = record.get("shape");
        Object data = record.get("data");
        if (!f.dtype.equals(dtype)) {
            throw fail(f.path + ".dtype", "is " + Text.show(dtype) + ", expected " + Text.reprString(f.dtype));
        }
        int rank = f.shape.size();
        boolean ok = shapeValue instanceof List && ((List<?>) shapeValue).size() == rank;
        for (Object n : ok ? (List<?>) shapeValue : Collections.emptyList()) {
            ok &= n instanceof Long || n instanceof BigInteger;
        }
        if (!ok) {
            throw fail(f.path + ".shape", "is " + Text.show(shapeValue) + ", expected " + rank + " integers ["
                    + String.join(", ", f.shape) + "]");
        }
        List<?> shape = (List<?>) shapeValue;
        String shown = shape.toString();
        long count = 1;
        for (int axis = 0; axis < rank; axis++) {
            String symbol = f.shape.get(axis);
            boolean power = symbol.startsWith("2^");
            String name = power ? symbol.substring(2) : symbol;
            Object n = shape.get(axis);
            long value = n instanceof Long ? (Long) n : -1;  // a BigInteger is outside every bound
            if (!dims.containsKey(name)) {
                Object[] bounds = Fields.DIMS.get(name);
                int low = (Integer) bounds[1];
                int high = (Integer) bounds[2];
                if (power && !(value >= 2 && (value & (value - 1)) == 0)) {
                    throw fail(f.path + ".shape", "is " + shown + ": its " + symbol + " axis is not a power of two");
                }
                if (!power && !(value >= low && value <= high)) {
                    throw fail(f.path + ".shape", "is " + shown + ": " + name + " must be " + low + " to " + high);
                }
                int defined = power ? 63 - Long.numberOfLeadingZeros(value) : (int) value;
                if (defined < low || defined > high) {
                    throw fail(f.path + ".shape", "is " + shown + ": " + name + " must be " + low + " to " + high);
                }
                dims.put(name, defined);
            }
            long expected = power ? 1L << dims.get(name) : dims.get(name);
            if (value != expected) {
                List<Object> wanted = new ArrayList<>();
                for (String s : f.shape) {
                    String base = s.startsWith("2^") ? s.substring(2) : s;
                    wanted.add(!dims.containsKey(base) ? "None" : s.startsWith("2^") ? 1L << dims.get(base) : dims.get(base));
                }
                throw fail(f.path + ".shape", "is " + shown + ", expected [" + String.join(", ", f.shape) + "] = " + wanted);
            }
            count *= expected;  // every axis is bounded: the product fits a long
        }
        if (!(data instanceof Msgpack.Bin)) {
            throw fail(f.path + ".data", "is " + Msgpack.kind(data) + ", expected bin");
        }
        int item = f.dtype.equals("<i2") ? 2 : 4;
        Msgpack.Bin bin = (Msgpack.Bin) data;
        if (bin.length != count * item) {
            throw fail(f.path + ".data", "has " + bin.length + " bytes, but " + f.dtype + " " + shown + " needs "
                    + count * item);
        }
        ByteBuffer b = bin.buffer().order(ByteOrder.LITTLE_ENDIAN);
        if (f.dtype.equals("<i2")) {
            short[] out = new short[(int) count];
            b.asShortBuffer().get(out);
            return out;
        }
        if (f.dtype.equals("<i4")) {
            int[] out = new int[(int) count];
            b.asIntBuffer().get(out);
            return out;
        }
        float[] out = new float[(int) count];
        b.asFloatBuffer().get(out);
        for (float x : out) {
            if (Float.isNaN(x) || Float.isInfinite(x)) {
                throw fail(f.path, "holds a value that is not finite");
            }
        }
        return out;
    }

    // ------------------------------------------------------------------ relations and decoding

    @SuppressWarnings("unchecked")
    private static Bundle decode(Map<String, Object> doc, int minor) throws BundleException {
        Map<String, Integer> dims = new HashMap<>();
        Map<String, Object> v = fields(doc, minor > MINOR, dims);
        for (Object path : (List<?>) v.getOrDefault("requires", Collections.emptyList())) {
            if (!Fields.BY_PATH.containsKey(path)) {
                throw new BundleException("this bundle requires '" + Text.escape((String) path) + "', which this "
                        + "dpedge does not know: upgrade dpedge to read it");
            }
        }
        Map<String, PrivacyFacts> releases = new LinkedHashMap<>();
        for (String name : PrivacyFacts.STATISTICS) {
            if (v.containsKey("releases." + name)) {
                releases.put(name, new PrivacyFacts(name, (Map<?, ?>) v.get("releases." + name)));
            }
        }
        if (!releases.containsKey(PrivacyFacts.CLASS_SUMS) && !releases.containsKey(PrivacyFacts.VOTES)) {
            throw new BundleException("field 'releases' holds neither class_sums nor votes: nothing to classify with");
        }
        long perUnit = (Long) v.get("privacy.max_records_per_unit");
        PrivacyFacts.check(releases, (Double) v.get("privacy.epsilon"), perUnit, dims.getOrDefault("T", 0));
        List<String> labels = (List<String>) v.get("labels");
        List<String> descriptions = (List<String>) v.get("label_descriptions");
        if (descriptions != null && descriptions.size() != labels.size()) {
            throw fail("label_descriptions", "has " + descriptions.size() + " entries for " + labels.size() + " labels");
        }
        Map<String, Integer> seen = new HashMap<>();
        for (int i = 0; i < labels.size(); i++) {
            Integer j = seen.putIfAbsent(Text.fold(labels.get(i)), i);
            if (j != null) {
                throw new BundleException("labels " + j + " and " + i + " (" + Text.show(labels.get(j)) + " and "
                        + Text.show(labels.get(i)) + ") look the same once normalised (NFKC, invisible characters removed)");
            }
        }
        if (dims.containsKey("k") && dims.get("k") > dims.get("D")) {
            throw fail("subspace.projection", "has " + dims.get("k") + " rows, more than the embedding size "
                    + dims.get("D"));
        }
        float[] check = (float[]) v.get("encoder.check_embedding");
        double sq = 0;
        for (float x : check) {
            sq += (double) x * x;
        }
        double norm = Math.sqrt(sq);
        if (!(norm > 0.9 && norm < 1.1)) {
            throw fail("encoder.check_embedding", "has norm " + Text.g(norm, 4) + ", expected a unit vector");
        }
        Map<String, Object> encoder = (Map<String, Object>) doc.get("encoder");
        List<String> top = new ArrayList<>(doc.keySet());
        List<String> inEncoder = new ArrayList<>(encoder.keySet());
        if (v.containsKey("encoder.weights") && (!top.get(top.size() - 2).equals("encoder")
                || !inEncoder.get(inEncoder.size() - 1).equals("weights"))) {
            throw fail("encoder.weights", "must be the last entry of 'encoder', the last map before 'sha256'");
        }
        TokenizerFamily.check((String) v.get("encoder.tokenizer_json"));
        Msgpack.Bin weights = (Msgpack.Bin) v.get("encoder.weights");
        List<ModelFamily.ExternalData> external = ModelFamily.check((String) v.get("encoder.format"),
                (Msgpack.Bin) v.get("encoder.model"), weights == null ? 0 : weights.length);

        Bundle.Builder b = new Bundle.Builder();
        b.labels = Collections.unmodifiableList(labels);
        b.labelDescriptions = descriptions == null ? null : Collections.unmodifiableList(descriptions);
        b.privacy = publicMap(v.get("privacy"));
        b.releases = Collections.unmodifiableMap(releases);
        b.version = new int[] {MAJOR, minor};
        b.classCounts = (int[]) v.get("releases.class_counts.values");
        b.classSums = (int[]) v.get("releases.class_sums.values");
        b.k = dims.getOrDefault("k", 0);
        b.origin = (float[]) v.get("subspace.origin");
        b.projection = (float[]) v.get("subspace.projection");
        b.votes = (short[]) v.get("releases.votes.values");
        b.hyperplanes = (float[]) v.get("hashing.hyperplanes");
        b.offsets = (float[]) v.get("hashing.offsets");
        b.tables = dims.getOrDefault("T", 0);
        b.bits = b.votes == null ? 0 : dims.get("H");
        b.prior = (float[]) v.get("prior");
        b.scoring = v.containsKey("scoring") ? new Bundle.Scoring((Map<?, ?>) v.get("scoring")) : null;
        b.exporter = v.containsKey("exporter") ? publicMap(v.get("exporter")) : Collections.emptyMap();
        b.encoder = new Bundle.Encoder(encoder, check, external);
        return new Bundle(b);
    }

    /** A parsed map with binary values copied out, so nothing public aliases the file's bytes. */
    @SuppressWarnings("unchecked")
    static Map<String, Object> publicMap(Object m) {
        return m == null ? Collections.emptyMap() : (Map<String, Object>) copyOut(m);
    }

    private static Object copyOut(Object v) {
        if (v instanceof Msgpack.Bin) {
            return ((Msgpack.Bin) v).copy();
        } else if (v instanceof List) {
            List<Object> out = new ArrayList<>();
            for (Object x : (List<?>) v) {
                out.add(copyOut(x));
            }
            return Collections.unmodifiableList(out);
        } else if (v instanceof Map) {
            Map<String, Object> out = new LinkedHashMap<>();
            for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
                out.put((String) e.getKey(), copyOut(e.getValue()));
            }
            return Collections.unmodifiableMap(out);
        }
        return v;
    }
}
