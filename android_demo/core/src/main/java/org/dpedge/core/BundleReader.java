package org.dpedge.core;

import java.io.File;
import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Reads a bundle of format 1 by interpreting format/1/schema.json, in the order that decides
 * which refusal a file gets first (docs/bundle-format.md section 8, runtime/bundle/reader.py):
 * the container ({@link Container}); the version; {@code requires} with its paths, then
 * {@code encoder_pack} with the pack checks (section 10); every row of the field table in its
 * order (presence, then the value: type, finiteness, bounds, text rules, choices; an array
 * record's record, dtype, shape, data and finiteness; then, for a row marked listed, that
 * {@code requires} lists it); unknown keys; the relations in order; the
 * tokenizer family ({@link TokenizerFamily}); the model family ({@link ModelFamily}). Reads an
 * encoder pack (1.1) the same way over the pack's rows: its magic, version, the table's encoder
 * and digest. Every refusal is one {@link BundleException} with the reference reader's code and
 * path.
 */
public final class BundleReader {
    /** One row of the field table. */
    static final class Row {
        final String path;
        final String key;
        final String parent;
        final Map<String, Object> m;

        Row(Map<String, Object> m) {
            this.m = m;
            path = (String) m.get("path");
            int dot = path.lastIndexOf('.');
            key = path.substring(dot + 1);
            parent = dot < 0 ? "" : path.substring(0, dot);
        }

        /** The same row with one entry replaced (an encoder pack's variant of a bundle's row). */
        Row with(String name, Object value) {
            Map<String, Object> copy = new LinkedHashMap<>(m);
            copy.put(name, value);
            return new Row(copy);
        }

        String kind() {
            return (String) m.get("kind");
        }

        String s(String name) {
            return (String) m.get(name);
        }

        List<Object> list(String name) {
            return Contract.cast(m.getOrDefault(name, List.of()));
        }

        /** Marked "listed": its absence would change an answer, so when present it is in requires. */
        boolean listed() {
            return Boolean.TRUE.equals(m.get("listed"));
        }
    }

    static final List<Row> FIELDS = new ArrayList<>();
    static final Map<String, Row> BY_PATH = new HashMap<>();
    /** The magics of a bundle and of an encoder pack. */
    private static final String FORMAT = Contract.string("format");
    private static final String PACK_FORMAT = Contract.string("pack_format");
    /** An encoder pack's rows (section 10): its magic, version, the table's encoder (required there), digest. */
    static final List<Row> PACK_FIELDS = new ArrayList<>();

    static {
        for (Object o : Contract.list("fields")) {
            Row r = new Row(Contract.cast(o));
            FIELDS.add(r);
            BY_PATH.put(r.path, r);
        }
        PACK_FIELDS.add(BY_PATH.get("format").with("choices", List.of(PACK_FORMAT)));
        PACK_FIELDS.add(BY_PATH.get("version"));
        for (Row r : FIELDS) {
            if (underEncoder(r.path)) {
                PACK_FIELDS.add(r.path.equals("encoder") ? r.with("need", "required") : r);
            }
        }
        PACK_FIELDS.add(BY_PATH.get("sha256"));
    }

    private static final long MAJOR = ((Number) Contract.list("version").get(0)).longValue();
    private static final long MINOR = ((Number) Contract.list("version").get(1)).longValue();

    private BundleReader() {
    }

    /** Whether a path is the encoder's or inside it (what an encoder pack holds). */
    private static boolean underEncoder(String path) {
        return path.equals("encoder") || path.startsWith("encoder.");
    }

    /** Reads and validates a bundle file that carries its own encoder; see {@link #read(File, EncoderPack)}. */
    public static Bundle read(File file) throws BundleException {
        return read(file, null);
    }

    /**
     * Reads and validates a bundle file; every refusal's message starts with the file's name. A
     * statistics bundle (1.1) is read with the encoder pack it names ({@code pack}, from
     * {@link #readPack}), and only with it; a bundle with its own encoder with none (null).
     */
    public static Bundle read(File file, EncoderPack pack) throws BundleException {
        byte[] data = bytes(file, "bundle");
        try {
            return read(data, pack);
        } catch (BundleException e) {
            throw e.within(file.toString());
        }
    }

    /** Parses and validates bundle bytes that carry their own encoder; see {@link #read(byte[], EncoderPack)}. */
    public static Bundle read(byte[] data) throws BundleException {
        return read(data, null);
    }

    /** Parses and validates bundle bytes (kept: the encoder's weights are a view of them), with its pack or null. */
    public static Bundle read(byte[] data, EncoderPack pack) throws BundleException {
        Container.sealed(data, FORMAT);
        Map<String, Object> doc = document(data);
        int[] version = version(doc, FORMAT);
        requires(doc);
        namedPack(doc, pack);
        Map<String, Integer> dims = new HashMap<>();
        Map<String, Object> values = fields(doc, version, dims, FIELDS, pack);
        Map<String, PrivacyFacts> releases = new LinkedHashMap<>();
        for (Object name : Contract.list("statistics")) {
            Map<?, ?> r = (Map<?, ?>) values.get("releases." + name);
            if (r != null) {
                releases.put((String) name, new PrivacyFacts((String) name, r));
            }
        }
        // The head (1.1) is no statistic of schema.json "statistics": an (epsilon, delta) release beside them.
        Map<?, ?> h = (Map<?, ?>) values.get("releases.head");
        HeadFacts head = h == null ? null : new HeadFacts(h);
        relations(values, dims, releases, head);
        // A statistics bundle's encoder is its pack's, checked when the pack was read.
        Bundle.Encoder encoder = pack != null ? pack.encoder : encoder(doc, values);
        return new Bundle(values, dims, releases, head, version, encoder, pack == null ? null : pack.digest);
    }

    /** Reads and validates an encoder pack file of any digest; see {@link #readPack(File, Collection)}. */
    public static EncoderPack readPack(File file) throws BundleException {
        return readPack(file, null);
    }

    /**
     * Reads and validates an encoder pack file (1.1) as {@link #read(File)} reads a bundle.
     * {@code expect}: the SHA-256 digests (hex) the application accepts, or null for any; any
     * other pack is refused ({@code pack.untrusted}) before it is parsed.
     */
    public static EncoderPack readPack(File file, Collection<String> expect) throws BundleException {
        byte[] data = bytes(file, "encoder pack");
        try {
            return readPack(data, expect);
        } catch (BundleException e) {
            throw e.within(file.toString());
        }
    }

    /** Parses and validates encoder pack bytes of any digest; see {@link #readPack(byte[], Collection)}. */
    public static EncoderPack readPack(byte[] data) throws BundleException {
        return readPack(data, null);
    }

    /** Parses and validates encoder pack bytes (kept: the model and weights are views of them); see above. */
    public static EncoderPack readPack(byte[] data, Collection<String> expect) throws BundleException {
        byte[] digest = Container.sealed(data, PACK_FORMAT);
        String hex = EncoderPack.hex(digest);
        if (expect != null && !accepted(expect, hex)) {
            throw new BundleException("pack.untrusted", "", "encoder pack " + hex.substring(0, 16) + "... is not one "
                    + "of the " + new HashSet<>(expect).size() + " this application accepts");
        }
        Map<String, Object> doc = document(data);
        int[] version = version(doc, PACK_FORMAT);
        Map<String, Object> values = fields(doc, version, new HashMap<>(), PACK_FIELDS, null);
        Bundle.Encoder encoder = encoder(doc, values);
        Map<String, Object> own = new LinkedHashMap<>();
        values.forEach((path, x) -> {
            if (underEncoder(path)) {
                own.put(path, x);
            }
        });
        return new EncoderPack(digest, encoder, own);
    }

    /** Whether {@code hex} (lowercase) is one of the accepted digests, whose hex letters may be either case. */
    private static boolean accepted(Collection<String> expect, String hex) {
        for (String e : expect) {
            boolean same = e != null && e.length() == hex.length();
            for (int i = 0; same && i < hex.length(); i++) {
                char c = e.charAt(i);
                same = (c >= 'A' && c <= 'Z' ? (char) (c + ('a' - 'A')) : c) == hex.charAt(i);
            }
            if (same) {
                return true;
            }
        }
        return false;
    }

    /** A file's bytes, refused as the container refuses (container.size) when they cannot be had whole. */
    private static byte[] bytes(File file, String what) throws BundleException {
        if (file.isDirectory() || (file.exists() && !file.isFile())) {
            throw new BundleException("container.size", "", file + ": not a regular file, so not " + an(what));
        }
        if (!file.exists()) {
            throw new BundleException("container.size", "", file + ": no such " + what + " file");
        }
        long size = file.length();
        if (size > Container.MAX_BUNDLE_BYTES) {
            throw new BundleException("container.size", "", file + ": " + size + " bytes is larger than any " + what);
        }
        byte[] data = new byte[(int) size];
        try (InputStream in = new FileInputStream(file)) {
            int n = 0;
            for (int r; n < data.length && (r = in.read(data, n, data.length - n)) >= 0; ) {
                n += r;
            }
            if (n < data.length || in.read() >= 0) {
                throw new BundleException("container.size", "", file + ": the file changed while it was read");
            }
        } catch (IOException e) {
            throw new BundleException("container.size", "", file + ": cannot read it: " + e.getMessage());
        } catch (OutOfMemoryError e) {
            throw new BundleException("container.size", "", file + ": does not fit in this process's memory", e);
        }
        return data;
    }

    private static String an(String what) {
        return (what.startsWith("e") ? "an " : "a ") + what;
    }

    /** The document of sealed bytes: one map that starts with format and version and ends with sha256. */
    private static Map<String, Object> document(byte[] data) throws BundleException {
        Map<String, Object> doc = Container.read(data);
        List<String> keys = new ArrayList<>(doc.keySet());
        if (keys.size() < 2 || !keys.get(0).equals("format") || !keys.get(1).equals("version")
                || !keys.get(keys.size() - 1).equals("sha256")) {
            throw new BundleException("container.layout", "", "a dpedge file's map starts with format and version and "
                    + "ends with sha256");
        }
        return doc;
    }

    /** The magic ({@code magic}: a bundle's or a pack's) and [major, minor], of major 1. */
    private static int[] version(Map<String, Object> doc, String magic) throws BundleException {
        Object format = doc.get("format");
        if (!magic.equals(format)) {
            String what = magic.equals(FORMAT) ? "bundle" : "encoder pack";
            String is = FORMAT.equals(format) ? "it is a bundle" : PACK_FORMAT.equals(format) ? "it is an encoder pack"
                    : "field 'format' is not \"" + magic + "\"";
            throw new BundleException("version.format", "format", "not a dpedge " + what + ": " + is);
        }
        Object v = doc.get("version");
        boolean ok = v instanceof List && ((List<?>) v).size() == 2;
        for (Object x : ok ? (List<?>) v : List.of()) {
            ok &= x instanceof Long && (Long) x >= 0 && (Long) x < (1L << 31);
        }
        if (!ok) {
            throw fail("version.malformed", "version", "is not [major, minor]");
        }
        long major = (Long) ((List<?>) v).get(0);
        long minor = (Long) ((List<?>) v).get(1);
        if (major != MAJOR) {
            throw fail("version.major", "version", "is " + major + "." + minor + ": this reader reads " + MAJOR + ".x");
        }
        return new int[] {(int) major, (int) minor};
    }

    /**
     * {@code requires} is judged as soon as it is read (its row, then its paths): a newer bundle
     * is refused for what this reader does not know before anything it lacks.
     */
    private static void requires(Map<String, Object> doc) throws BundleException {
        if (!doc.containsKey("requires")) {
            return;
        }
        List<?> requires = (List<?>) value(BY_PATH.get("requires"), doc.get("requires"), new HashMap<>());
        for (int i = 0; i < requires.size(); i++) {
            if (!BY_PATH.containsKey(requires.get(i))) {
                throw fail("version.requires", "requires[" + i + "]", "names " + requires.get(i) + ", a field this "
                        + "reader does not know: upgrade it to read this bundle");
            }
        }
    }

    /**
     * Relation "listed", checked right after a present field's value: a row marked listed (its
     * absence would change an answer) is in requires, so that a reader not knowing it refuses the
     * bundle (version.requires) rather than ignoring it and answering otherwise.
     */
    private static void listed(Row f, Map<String, Object> doc) throws BundleException {
        if (f.listed() && !((List<?>) doc.getOrDefault("requires", List.of())).contains(f.path)) {
            throw fail("relation.requires", "requires", "must list " + f.path + ", which this bundle has");
        }
    }

    /**
     * A statistics bundle names its encoder pack (1.1), judged as soon as it is read (with its
     * relation "listed"), and is read with that pack alone; a bundle with its own encoder with none.
     */
    private static void namedPack(Map<String, Object> doc, EncoderPack pack) throws BundleException {
        if (!doc.containsKey("encoder_pack")) {
            if (pack != null) {
                throw new BundleException("pack.unexpected", "encoder_pack", "this bundle carries its own encoder, but "
                        + "an encoder pack was given for it");
            }
            return;
        }
        Row f = BY_PATH.get("encoder_pack");
        Container.Bin named = (Container.Bin) value(f, doc.get("encoder_pack"), new HashMap<>());
        listed(f, doc);
        String hex = EncoderPack.hex(named.copy());
        if (pack == null) {
            throw new BundleException("pack.missing", "encoder_pack", "this bundle is scored with encoder pack " + hex
                    + ", and none was given");
        }
        if (!Arrays.equals(named.copy(), pack.digest)) {
            throw new BundleException("pack.mismatch", "encoder_pack", "this bundle names encoder pack " + hex
                    + ", not the one given (" + pack.sha256() + ")");
        }
    }

    static BundleException fail(String code, String path, String why) {
        return new BundleException(code, path, "field '" + path + "' " + why);
    }

    // ------------------------------------------------------------------ the table

    private static boolean has(Map<?, ?> doc, String path) {
        Object node = doc;
        for (String key : path.split("\\.")) {
            if (!(node instanceof Map) || !((Map<?, ?>) node).containsKey(key)) {
                return false;
            }
            node = ((Map<?, ?>) node).get(key);
        }
        return true;
    }

    /** A condition of schema.json "conditions" on the document. */
    static boolean holds(String name, Map<?, ?> doc) {
        Map<?, ?> rule = (Map<?, ?>) Contract.map("conditions").get(name);
        if (rule.containsKey("present_any") || rule.containsKey("present_none")) {
            boolean any = rule.containsKey("present_any");  // present_none: not present_any
            for (Object p : (List<?>) rule.get(any ? "present_any" : "present_none")) {
                if (has(doc, (String) p)) {
                    return any;
                }
            }
            return !any;
        }
        if (rule.containsKey("present_all")) {
            for (Object p : (List<?>) rule.get("present_all")) {
                if (!has(doc, (String) p)) {
                    return false;
                }
            }
            return true;
        }
        List<?> eq = (List<?>) rule.get("equals");
        Object node = doc;
        for (String key : ((String) eq.get(0)).split("\\.")) {
            node = node instanceof Map ? ((Map<?, ?>) node).get(key) : null;
        }
        return eq.get(1).equals(node);
    }

    /**
     * Every row of {@code rows} (a bundle's table, or a pack's) checked in its order; the present
     * fields by path (arrays decoded), and the dims. With {@code pack}, the encoder's values are
     * the pack's, checked when it was read: the bundle's encoder rows are not read, and D is the
     * pack's dim.
     */
    private static Map<String, Object> fields(Map<String, Object> doc, int[] version, Map<String, Integer> dims,
            List<Row> rows, EncoderPack pack) throws BundleException {
        Map<String, Object> values = new LinkedHashMap<>();
        values.put("", doc);
        dims.put("C", doc.get("labels") instanceof List ? ((List<?>) doc.get("labels")).size() : 0);
        if (pack != null) {
            values.putAll(pack.values);
            dims.put("D", pack.encoder.dim);
        }
        for (Row f : rows) {
            if (pack != null && underEncoder(f.parent)) {
                continue;
            }
            Map<?, ?> parent = (Map<?, ?>) values.get(f.parent);
            if (parent == null) {
                continue;
            }
            String need = f.s("need");
            if (need.startsWith("iff ")) {
                boolean wanted = holds(need.substring(4), doc);
                if (parent.containsKey(f.key) && !wanted) {
                    throw fail("field.not_allowed", f.path, "must be absent unless "
                            + ((Map<?, ?>) Contract.map("conditions").get(need.substring(4))).get("doc"));
                }
                if (!wanted) {
                    continue;
                }
            }
            if (!parent.containsKey(f.key)) {
                if (!need.equals("optional")) {
                    throw new BundleException("field.missing", f.path, "missing field '" + f.path + "'");
                }
                continue;
            }
            Object value = value(f, parent.get(f.key), dims);
            values.put(f.path, value);
            listed(f, doc);
            if (f.path.equals("encoder.dim")) {
                int d = ((Long) value).intValue();
                if (dims.computeIfAbsent("D", x -> d) != d) {
                    throw fail("array.shape", f.path, "is " + d + ", but the arrays before it are " + dims.get("D")
                            + "-d");
                }
            }
        }
        for (Map.Entry<String, Object> e : values.entrySet()) {
            Row f = BY_PATH.get(e.getKey());
            if (f != null && (!f.kind().equals("map") || Boolean.TRUE.equals(f.m.get("open")))
                    || pack != null && underEncoder(e.getKey())) {
                continue;
            }
            Set<String> known = new HashSet<>();
            for (Row g : rows) {
                if (g.parent.equals(e.getKey())) {
                    known.add(g.key);
                }
            }
            for (Object key : ((Map<?, ?>) e.getValue()).keySet()) {
                String path = e.getKey().isEmpty() ? (String) key : e.getKey() + "." + key;
                if (known.contains(key)) {
                    continue;
                } else if (e.getKey().equals("releases")) {
                    throw fail("field.release", path, "is a release this reader cannot account for");
                } else if (version[1] <= MINOR) {  // a newer minor's fields are ignored
                    throw new BundleException("field.unknown", path, "unknown field '" + path + "' in a version "
                            + version[0] + "." + version[1] + " file");
                }
            }
        }
        return values;
    }

    /** The msgpack type each kind must have. */
    private static final Map<String, Class<?>> TYPES = Map.of("map", Map.class, "str", String.class, "int", Long.class,
            "float", Double.class, "bool", Boolean.class, "bin", Container.Bin.class, "version", List.class,
            "strings", List.class);

    private static boolean isType(Object v, String kind) {
        return v != null && (TYPES.get(kind).isInstance(v) || (kind.equals("int") && v instanceof BigInteger));
    }

    private static String kindOf(Object v) {
        return v == null ? "nil" : v instanceof Container.Bin ? "bin" : v instanceof BigInteger ? "integer"
                : v instanceof Map ? "a map" : v instanceof List ? "an array" : v.getClass().getSimpleName();
    }

    /** One field's value checked against its row (an array record becomes a Java array). */
    private static Object value(Row f, Object v, Map<String, Integer> dims) throws BundleException {
        String kind = f.kind();
        if (kind.equals("ndarray")) {
            return array(f, v, dims);
        }
        if (!isType(v, kind)) {
            throw fail("field.type", f.path, "is " + kindOf(v) + ", not of kind " + kind);
        }
        if (kind.equals("float") && !Double.isFinite((Double) v)) {
            throw fail("field.not_finite", f.path, "is " + v + ", not a finite number");
        }
        if (kind.equals("int") || kind.equals("float")) {
            bounded(f, v, "field.range", "is");
        } else if (kind.equals("str") || kind.equals("bin") || kind.equals("strings")) {
            long n = v instanceof String ? Text.length((String) v) : v instanceof List ? ((List<?>) v).size()
                    : ((Container.Bin) v).length;
            bounded(f, n, "field.length", "has length");
        }
        if (Boolean.TRUE.equals(f.m.get("open"))) {
            informational(f, v);
        }
        List<Object> choices = f.list("choices");
        if (kind.equals("str")) {
            text(f, f.path, (String) v);
            if (!choices.isEmpty() && !choices.contains(v)) {
                throw fail("field.choice", f.path, "is '" + v + "', not one of " + choices);
            }
        }
        if (kind.equals("strings")) {
            List<?> items = (List<?>) v;
            for (int i = 0; i < items.size(); i++) {
                if (!(items.get(i) instanceof String)) {
                    throw fail("field.type", f.path + "[" + i + "]", "is " + kindOf(items.get(i)) + ", not a string");
                }
                text(f, f.path + "[" + i + "]", (String) items.get(i));
            }
            if (!choices.isEmpty() && (new HashSet<>(items).size() != items.size() || !choices.containsAll(items))) {
                throw fail("field.choice", f.path, "must hold distinct names of " + choices);
            }
        }
        return v;
    }

    /** An open map holds nil, booleans, integers, finite floats, strings, arrays and maps (walked as the reference). */
    private static void informational(Row f, Object v) throws BundleException {
        List<Object> stack = new ArrayList<>(List.of(v));
        while (!stack.isEmpty()) {
            Object x = stack.remove(stack.size() - 1);
            if (x instanceof Container.Bin) {
                throw fail("field.type", f.path, "holds binary data, which informational fields may not");
            }
            if (x instanceof Double && !Double.isFinite((Double) x)) {
                throw fail("field.not_finite", f.path, "holds " + x + ", not a finite number");
            }
            if (x instanceof Map) {
                stack.addAll(((Map<?, ?>) x).values());
            } else if (x instanceof List) {
                stack.addAll((List<?>) x);
            }
        }
    }

    private static BigDecimal decimal(Object x) {
        return x instanceof Double ? new BigDecimal((Double) x)
                : x instanceof BigInteger ? new BigDecimal((BigInteger) x) : BigDecimal.valueOf(((Number) x).longValue());
    }

    private static void bounded(Row f, Object x, String code, String what) throws BundleException {
        Object low = f.m.get("low");
        Object high = f.m.get("high");
        if ((low != null && decimal(x).compareTo(decimal(low)) < 0)
                || (high != null && decimal(x).compareTo(decimal(high)) > 0)) {
            throw fail(code, f.path, what + " " + x + ", outside " + (low == null ? "any" : low) + " to "
                    + (high == null ? "any" : high));
        }
    }

    /** The text kind's rules in order: its length, then each of its rules. */
    private static void text(Row f, String where, String s) throws BundleException {
        if (f.s("text") == null) {
            return;
        }
        Map<?, ?> kind = (Map<?, ?>) Contract.map("text.kinds").get(f.s("text"));
        long most = ((Number) kind.get("max_chars")).longValue();
        if (Text.length(s) > most) {
            throw fail("field.length", where, "has " + Text.length(s) + " characters, more than " + most);
        }
        for (Object rule : (List<?>) kind.get("rules")) {
            int bad = rule.equals("unprintable") ? Text.unprintable(s)
                    : rule.equals("unassigned") ? Text.unassigned(s) : -1;
            if (bad >= 0) {
                throw fail("text." + rule, where, "holds " + Text.uPlus(bad) + ", which is " + rule + " (Unicode "
                        + Unicode.VERSION + ")");
            }
            if (rule.equals("blank") && !Text.showsSomething(s)) {
                throw fail("text.blank", where, "shows nothing (only white space, invisible or blank characters)");
            }
        }
    }

    /** An array record: exactly dtype, shape and data; the shape's symbols agreeing; the data's size; finite floats. */
    private static Object array(Row f, Object v, Map<String, Integer> dims) throws BundleException {
        if (!(v instanceof Map) || !((Map<?, ?>) v).keySet().equals(Set.of("dtype", "shape", "data"))) {
            throw fail("array.record", f.path, "is not an array record (a map of exactly dtype, shape and data)");
        }
        Map<?, ?> record = (Map<?, ?>) v;
        String dtype = f.s("dtype");
        if (!dtype.equals(record.get("dtype"))) {
            throw fail("array.dtype", f.path + ".dtype", "is not '" + dtype + "'");
        }
        List<Object> symbols = f.list("shape");
        Object shapeValue = record.get("shape");
        String where = f.path + ".shape";
        boolean ok = shapeValue instanceof List && ((List<?>) shapeValue).size() == symbols.size();
        for (Object n : ok ? (List<?>) shapeValue : List.of()) {
            ok &= n instanceof Long || n instanceof BigInteger;
        }
        if (!ok) {
            throw fail("array.shape", where, "is not " + symbols.size() + " integers " + symbols);
        }
        List<?> shape = (List<?>) shapeValue;
        long count = 1;
        for (int axis = 0; axis < symbols.size(); axis++) {
            String symbol = (String) symbols.get(axis);
            boolean power = symbol.startsWith("2^");
            String name = power ? symbol.substring(2) : symbol;
            Object n = shape.get(axis);
            long value = n instanceof Long ? (Long) n : -1;  // a BigInteger is beyond every bound
            if (!dims.containsKey(name)) {
                if (power && !(value >= 2 && (value & (value - 1)) == 0) && !(n instanceof BigInteger)) {
                    throw fail("array.shape", where, "is " + shape + ": its " + symbol + " axis is not a power of two");
                }
                Map<?, ?> dim = (Map<?, ?>) Contract.map("dims").get(name);
                long defined = power ? 63 - Long.numberOfLeadingZeros(value) : value;
                if (n instanceof BigInteger || defined < ((Number) dim.get("low")).longValue()
                        || defined > ((Number) dim.get("high")).longValue()) {
                    throw fail("array.shape", where, "is " + shape + ": " + name + " must be " + dim.get("low") + " to "
                            + dim.get("high"));
                }
                dims.put(name, (int) defined);
            }
            long expected = power ? 1L << dims.get(name) : dims.get(name);
            if (value != expected || n instanceof BigInteger) {
                throw fail("array.shape", where, "is " + shape + ", but " + symbol + " is " + expected);
            }
            count *= expected;  // every axis is bounded: the product fits
        }
        Object data = record.get("data");
        if (!(data instanceof Container.Bin)) {
            throw fail("array.data", f.path + ".data", "is " + kindOf(data) + ", not bin");
        }
        int itemsize = ((Number) Contract.map("dtypes").get(dtype)).intValue();
        Container.Bin bin = (Container.Bin) data;
        if (bin.length != count * itemsize) {
            throw fail("array.data", f.path + ".data", "has " + bin.length + " bytes, but " + dtype + " " + shape
                    + " needs " + count * itemsize);
        }
        ByteBuffer b = bin.buffer().order(ByteOrder.LITTLE_ENDIAN);
        if (dtype.equals("<i2")) {
            short[] out = new short[(int) count];
            b.asShortBuffer().get(out);
            return out;
        } else if (dtype.equals("<i4")) {
            int[] out = new int[(int) count];
            b.asIntBuffer().get(out);
            return out;
        }
        float[] out = new float[(int) count];
        b.asFloatBuffer().get(out);
        for (float x : out) {
            if (!Float.isFinite(x)) {
                throw fail("field.not_finite", f.path, "holds a value that is not finite");
            }
        }
        return out;
    }

    // ------------------------------------------------------------------ relations

    private static boolean close(double a, double b) {
        return Math.abs(a - b) <= Contract.number("privacy_rtol") * Math.max(Math.abs(a), Math.abs(b));
    }

    /** schema.json "relations", in order, up to the encoder's ("requires" and "pack" are checked before). */
    private static void relations(Map<String, Object> v, Map<String, Integer> dims, Map<String, PrivacyFacts> releases,
            HeadFacts head) throws BundleException {
        boolean statistics = releases.containsKey("class_sums") || releases.containsKey("votes");
        if (!statistics && head == null) {
            throw fail("relation.nothing", "releases", "holds neither class_sums, votes nor head: nothing to classify "
                    + "with");
        }
        long perUnit = (Long) v.get("privacy.max_records_per_unit");
        if (head != null && statistics) {
            throw fail("relation.head", "releases.head", "must come with class_counts alone (and unit_count when K is "
                    + "above 1)");
        }
        // 1.3: a person-level head (K above 1) comes with unit_count, the noisy number of persons its
        // rule reads, and unit_count comes with such a head only (not alone, not with a K = 1 head).
        if (releases.containsKey("unit_count") != (head != null && perUnit != 1)) {
            throw fail("relation.unit_count", "releases.unit_count", head != null
                    ? "must come with a person-level head (K above 1), and such a head with it"
                    : "comes only with a person-level head");
        }
        double eps = (Double) v.get("privacy.epsilon");
        double total = 0;
        for (PrivacyFacts r : releases.values()) {  // in release order, left to right, the head last: every reader adds alike
            total += r.epsilon();
        }
        if (head != null) {
            total += head.epsilon();
        }
        if (!close(total, eps)) {
            throw fail("relation.shares", "privacy.epsilon", "is " + eps + ", but the releases spend " + total);
        }
        double delta = (Double) v.get("privacy.delta");
        if (head == null ? delta != 0 : !close(delta, head.delta())) {  // -0.0 is 0
            throw fail("relation.delta", "privacy.delta", "is " + delta + ", but the releases' deltas add up to "
                    + (head == null ? 0.0 : head.delta()));
        }
        for (PrivacyFacts r : releases.values()) {
            String where = "releases." + r.statistic();
            double need = r.sensitivityL1() / r.epsilon();
            if (!close(r.noiseScale(), need)) {
                throw fail("relation.noise_scale", where + ".noise_scale", "is " + r.noiseScale() + ", but sensitivity "
                        + r.sensitivityL1() + " at epsilon " + r.epsilon() + " needs " + need);
            }
            long one = r.statistic().equals("votes") ? dims.getOrDefault("T", 0) : 1;
            if (r.statistic().equals("class_sums")) {
                one = (long) Math.rint((double) r.grid() * r.clipL1());  // half to even, as the reference's round()
                if (one < 1) {
                    throw fail("relation.clip", where + ".clip_l1", "is " + r.clipL1() + ": less than one grid step");
                }
            }
            if (r.statistic().equals("unit_count")) {
                // 1.3: one unit moves a count of units by 1, whatever K (not K x one, as the others).
                if (r.sensitivityL1() != 1) {
                    throw fail("relation.sensitivity", where + ".sensitivity_l1", "is " + r.sensitivityL1() + ", but "
                            + "one unit moves a count of units by 1");
                }
            } else if (!BigInteger.valueOf(r.sensitivityL1()).equals(
                    BigInteger.valueOf(perUnit).multiply(BigInteger.valueOf(one)))) {
                throw fail("relation.sensitivity", where + ".sensitivity_l1", "is " + r.sensitivityL1() + ", but "
                        + perUnit + " record(s) per unit give " + perUnit + " x " + one);
            }
        }
        if (head != null) {
            headRelations(head);
        }
        wording((String) v.get("privacy.privacy_unit"), (String) v.get("privacy.neighbour_relation"), perUnit);
        Object batches = v.get("privacy.batches");
        composition((String) v.get("privacy.composition"), releases.keySet(), head != null,
                batches == null ? 1 : ((Number) batches).longValue());
        List<?> labels = (List<?>) v.get("labels");
        List<?> descriptions = (List<?>) v.get("label_descriptions");
        if (descriptions != null && descriptions.size() != labels.size()) {
            throw fail("relation.descriptions", "label_descriptions", "has " + descriptions.size() + " entries for "
                    + labels.size() + " labels");
        }
        Map<String, Integer> seen = new HashMap<>();
        for (int i = 0; i < labels.size(); i++) {
            Integer j = seen.putIfAbsent(Text.labelKey((String) labels.get(i)), i);
            if (j != null) {
                throw new BundleException("relation.labels", "labels[" + i + "]", "labels " + j + " and " + i + " ('"
                        + labels.get(j) + "' and '" + labels.get(i) + "') look alike");
            }
        }
        if (dims.containsKey("k")) {
            long c = dims.get("C");
            long k = dims.get("k");
            long d = dims.get("D");
            if (k > d) {
                throw fail("relation.subspace", "subspace.projection", "has " + k + " rows, more than D = " + d);
            }
            if (c * k * d > Contract.integer("max_work")) {
                throw fail("relation.work", "subspace.projection", "makes C x k x D = " + c * k * d + ", more than "
                        + Contract.integer("max_work"));
            }
        }
    }

    /**
     * The head's own relations (1.1), after the pure releases': its noise scale, clip and
     * sensitivity, then the contract's bound on its epsilon ({@link Accountant}).
     */
    private static void headRelations(HeadFacts h) throws BundleException {
        double need = h.noiseMultiplier() * h.sensitivityL2();
        if (!close(h.noiseScale(), need)) {
            throw fail("relation.noise_scale", "releases.head.noise_scale", "is " + h.noiseScale() + ", but noise "
                    + "multiplier " + h.noiseMultiplier() + " at sensitivity " + h.sensitivityL2() + " needs " + need);
        }
        long one = (long) Math.rint((double) h.grid() * h.clipL2());  // half to even, as the reference's round()
        if (one < 1) {
            throw fail("relation.clip", "releases.head.clip_l2", "is " + h.clipL2() + ": less than one grid step of 1/"
                    + h.grid());
        }
        if (h.sensitivityL2() != one) {
            throw fail("relation.sensitivity", "releases.head.sensitivity_l2", "is " + h.sensitivityL2() + ", but a head "
                    + "clipped at " + h.clipL2() + " on a grid of " + h.grid() + " has " + one);
        }
        double bound = Accountant.headEpsilon(h.noiseMultiplier(), h.sampleRate(), h.steps(), h.delta());
        if (bound > h.epsilon() * (1.0 + Accountant.RTOL)) {
            throw fail("relation.accountant", "releases.head.epsilon", "is " + h.epsilon() + ", but " + h.steps()
                    + " steps at noise multiplier " + h.noiseMultiplier() + " and sample rate " + h.sampleRate()
                    + " are only (" + bound + ", " + h.delta() + ")-DP");
        }
    }

    /**
     * The checked encoder of the file that holds it (a bundle, or an encoder pack): the encoder's
     * relations ("check", "weights"), then the tokenizer family and the model family.
     */
    private static Bundle.Encoder encoder(Map<String, Object> doc, Map<String, Object> v) throws BundleException {
        double sq = 0;
        for (float x : (float[]) v.get("encoder.check_embedding")) {
            sq += (double) x * x;
        }
        double norm = Math.sqrt(sq);
        List<Object> bounds = Contract.list("check_norm");
        if (!(norm > ((Number) bounds.get(0)).doubleValue() && norm < ((Number) bounds.get(1)).doubleValue())) {
            throw fail("relation.check", "encoder.check_embedding", "has norm " + norm + ", not a unit vector");
        }
        List<String> top = new ArrayList<>(doc.keySet());
        List<?> inEncoder = new ArrayList<>(((Map<?, ?>) doc.get("encoder")).keySet());
        if (v.containsKey("encoder.weights") && (!top.get(top.size() - 2).equals("encoder")
                || !inEncoder.get(inEncoder.size() - 1).equals("weights"))) {
            throw fail("relation.weights", "encoder.weights", "must be the last entry of encoder, the last map before "
                    + "sha256");
        }
        Map<String, Object> tokenizer = TokenizerFamily.check((String) v.get("encoder.tokenizer_json"));
        Container.Bin weights = (Container.Bin) v.get("encoder.weights");
        String family = (String) v.getOrDefault("encoder.family", ModelFamily.DEFAULT_FAMILY);  // 1.2
        List<ModelFamily.ExternalData> external = ModelFamily.check((String) v.get("encoder.format"), family,
                (Container.Bin) v.get("encoder.model"), weights == null ? 0 : weights.length);
        return new Bundle.Encoder(v, new Tokenizer(tokenizer, ((Long) v.get("encoder.max_length")).intValue(),
                (String) v.get("encoder.text_prefix")), external);
    }

    /**
     * Relation "composition": privacy.composition, when present, is schema.json "wording"
     * "composition" for the bundle's releases (in "statistics" order), its head and B (section 5).
     */
    static void composition(String text, Set<String> releases, boolean head, long batches)
            throws BundleException {
        if (text == null) {
            return;
        }
        Map<?, ?> words = (Map<?, ?>) Contract.map("wording").get("composition");
        List<String> names = new ArrayList<>();
        for (Object name : Contract.list("statistics")) {
            if (releases.contains((String) name)) {
                names.add((String) name);
            }
        }
        String within = ((String) words.get(head ? "head" : "pure"))
                .replace("{releases}", String.join((String) words.get("separator"), names));
        String want = batches > 1 ? ((String) words.get("batches")).replace("{batches}", Long.toString(batches))
                .replace("{within}", within) : within;
        if (!text.equals(want)) {
            throw fail("relation.composition", "privacy.composition", "must be '" + want + "'");
        }
    }

    /** Relation "wording": the privacy unit and neighbour relation are schema.json "wording" for K. */
    static void wording(String unit, String relation, long k) throws BundleException {
        Map<?, ?> record = (Map<?, ?>) Contract.map("wording").get("record");
        Map<?, ?> person = (Map<?, ?>) Contract.map("wording").get("person");
        String kText = Long.toString(k);
        if (unit.equals(record.get("privacy_unit"))) {
            if (k != 1) {
                throw fail("relation.wording", "privacy.privacy_unit", "says one record, but "
                        + "privacy.max_records_per_unit is " + k);
            }
            if (!relation.equals(record.get("neighbour_relation"))) {
                throw fail("relation.wording", "privacy.neighbour_relation", "must be '"
                        + record.get("neighbour_relation") + "' for a unit of one record");
            }
            return;
        }
        String personUnit = ((String) person.get("privacy_unit")).replace("{K}", kText);
        if (!unit.equals(personUnit)) {
            throw fail("relation.wording", "privacy.privacy_unit", "must be '" + record.get("privacy_unit") + "' or '"
                    + personUnit + "'");
        }
        String prefix = ((String) person.get("neighbour_relation_prefix")).replace("{K}", kText);
        String suffix = ((String) person.get("neighbour_relation_suffix")).replace("{K}", kText);
        if (!(relation.startsWith(prefix) && relation.endsWith(suffix)
                && relation.length() > prefix.length() + suffix.length())) {
            throw fail("relation.wording", "privacy.neighbour_relation", "must read '" + prefix + "..." + suffix + "'");
        }
    }
}
