package org.dpedge.core;

import java.io.File;
import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.math.BigInteger;
import java.nio.ByteOrder;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

import org.dpedge.core.Fields.Kind;

/**
 * Reads and validates a {@code .dpedge} bundle (formats 1.x, 2.x, 3.x and 4.x).
 *
 * <p>Why a port rather than a looser reader: the Python reader ({@code runtime/bundle/reader.py},
 * {@code _checked_outer}, {@code _validate_payload}, {@code _read_tables}, {@code _read_check})
 * is the reference,
 * and a phone must refuse exactly the bundles it refuses, with the same key phrases, or a
 * file that is broken on one platform would be "fine" on another. The checks below follow it
 * in the same order. Unknown fields are ignored (minor versions only add fields). The format-2
 * fields ({@code lsh.offsets}, {@code class_stats}, {@code prior}, {@code scoring},
 * {@code privacy.releases}) are optional and, as in Python, read whatever the major version.
 * Format 2.1 added {@code scoring.centroid_rule} and {@code scoring.centroid_clip_l1} (the
 * Gaussian centroid rule, {@link Scorer}); a bundle without them means the 2.0 cosine rule, and
 * the scoring map's values are checked as Python's {@code _check_scoring} does (including the
 * bounds that keep the blend finite, and {@code scoring.prior_records_per_class}, the prior's
 * count term). Each {@code privacy.releases} entry must give its statistic, epsilon share,
 * {@code sensitivity_l1}, {@code noise_scale} and mechanism.
 *
 * <p>Format 3.0 (what the exporter writes for every bundle with class statistics) makes
 * {@code lsh} and {@code votes} optional: the default bundle releases the class counts and the
 * class sums ({@code privacy.releases} {@code class_counts}, then {@code class_sums}) and no
 * vote tables, and its embedding size is {@code encoder.dim}. Before major 3 both stay required
 * ("missing field 'lsh'"); from it, either one present means both are read. A bundle with
 * neither vote tables nor class statistics is refused, as is a "linear"
 * {@code scoring.prior_boost_rule} without class statistics; the top-level sensitivity and
 * noise scale are the votes release's, or the last release's without vote tables. The
 * {@code scoring} map may name the "cosine_public" centroid rule and the prior boost rule.
 * The privacy facts' consistency is checked by {@link PrivacyFacts}.
 *
 * <p>Every array's byte count is checked against its dtype and declared shape, in overflow-
 * safe long arithmetic, before any array is allocated, so a declared size never drives an
 * allocation.
 */
public final class BundleReader {
    static final String FORMAT_NAME = "dpedge-bundle";
    /** The major versions this reader reads, oldest first (Python's SUPPORTED_MAJORS). */
    static final long[] SUPPORTED_MAJORS = {1, 2, 3, 4};
    static final String READABLE_MAJORS = "1.x and 2.x and 3.x and 4.x";
    /** From this major on, {@code lsh} and {@code votes} are optional (Python's VOTES_OPTIONAL_FROM). */
    static final long VOTES_OPTIONAL_FROM = 3;
    static final String CHECKSUM_ALGORITHM = "sha256";
    /** The format allows up to 24 bits and 1024 tables (the exporter itself 20 and 128). */
    static final int MAX_BITS = 24;
    static final int MAX_TABLES = 1024;
    /** Python refuses files over 2 GiB; a Java array cannot hold quite that much. */
    static final long MAX_BUNDLE_BYTES = Integer.MAX_VALUE - 8;
    static final String VOTES_DTYPE = "<i2";
    static final String FLOAT_DTYPE = "<f4";
    static final List<String> ENCODER_FORMATS = Collections.unmodifiableList(Arrays.asList("onnx", "tflite"));
    /** Issue 13's bounds (Python's runtime/bundle/schema.py). */
    static final int MAX_CHECK_TEXT_CHARS = 1000;
    static final int MAX_NAME_CHARS = 128;
    static final int MAX_LABEL_CHARS = 200;
    static final int MAX_DESCRIPTION_CHARS = 2000;
    /** Code points labels and descriptions may not hold (inclusive ranges): Cc, line and
     * paragraph separators, bidirectional controls. */
    static final int[][] UNPRINTABLE_CODE_POINTS = {{0x00, 0x1F}, {0x7F, 0x9F}, {0x061C, 0x061C}, {0x200E, 0x200F},
        {0x2028, 0x202E}, {0x2066, 0x2069}};
    static final Set<String> KNOWN_INPUTS =
            new HashSet<>(Arrays.asList("input_ids", "attention_mask", "token_type_ids"));

    private BundleReader() {
    }

    /**
     * Reads a bundle file; messages start with the file's path, like Python's. (java.io rather
     * than java.nio.file, which Android has only from API 26.)
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
            throw new BundleException(file + ": " + size + " bytes is larger than any bundle ("
                    + MAX_BUNDLE_BYTES + " max)");
        }
        byte[] data = new byte[(int) size];
        try (InputStream in = new FileInputStream(file)) {
            int n = 0;
            while (n < data.length) {
                int r = in.read(data, n, data.length - n);
                if (r < 0) {
                    break;
                }
                n += r;
            }
            if (n < data.length || in.read() >= 0) {
                throw new BundleException(file + ": cannot read bundle: the file changed while it was read");
            }
        } catch (IOException e) {  // FileNotFoundException included: no permission, say
            throw new BundleException(file + ": cannot read bundle: " + e.getMessage(), e);
        }
        try {
            return read(data);
        } catch (BundleException e) {
            throw new BundleException(file + ": " + e.getMessage(), e);
        }
    }

    /** Parses and validates bundle bytes. */
    public static Bundle read(byte[] data) throws BundleException {
        if (data == null) {
            throw new BundleException("bundle is null");
        }
        long[] major = new long[1];
        Msgpack.Bin payload = checkedPayload(data, major);
        Map<String, Object> body = Msgpack.parseMap(payload.array, payload.offset, payload.length, "bundle payload");
        return validatePayload(new Fields(body, ""), major[0]);
    }

    /**
     * The outer map's payload bytes, after the format, version and checksum checks; the major
     * version is written to {@code major[0]}.
     */
    static Msgpack.Bin checkedPayload(byte[] data, long[] major) throws BundleException {
        Fields outer = new Fields(Msgpack.parseMap(data, 0, data.length, "bundle"), "");
        Object format = outer.m.get("format");
        if (!FORMAT_NAME.equals(format)) {
            throw new BundleException("not a dpedge bundle: field 'format' is " + Msgpack.repr(format)
                    + ", expected '" + FORMAT_NAME + "'");
        }
        major[0] = checkVersion((List<?>) outer.get("version", Kind.ARRAY));
        Fields checksum = outer.sub("checksum");
        String algorithm = checksum.string("algorithm");
        if (!CHECKSUM_ALGORITHM.equals(algorithm)) {
            throw new BundleException("unsupported checksum algorithm " + Msgpack.repr(algorithm));
        }
        Msgpack.Bin digest = (Msgpack.Bin) checksum.get("digest", Kind.BIN);
        Msgpack.Bin body = (Msgpack.Bin) outer.get("payload", Kind.BIN);
        byte[] actual = sha256(body);
        if (!MessageDigest.isEqual(actual, digest.copy())) {
            throw new BundleException(
                    "checksum mismatch: the bundle is corrupted (its payload changed after it was written)");
        }
        return body;
    }

    private static byte[] sha256(Msgpack.Bin bin) throws BundleException {
        try {
            MessageDigest md = MessageDigest.getInstance("SHA-256");
            md.update(bin.array, bin.offset, bin.length);
            return md.digest();
        } catch (NoSuchAlgorithmException e) {
            throw new BundleException("this Java runtime has no SHA-256", e);
        }
    }

    /** The major version, if this reader reads it. */
    static long checkVersion(List<?> version) throws BundleException {
        if (version.size() != 2 || !Kind.INTEGER.matches(version.get(0)) || !Kind.INTEGER.matches(version.get(1))) {
            throw new BundleException("field 'version' must be [major, minor], got " + Msgpack.repr(version));
        }
        Object major = version.get(0);
        Object minor = version.get(1);
        long newest = SUPPORTED_MAJORS[SUPPORTED_MAJORS.length - 1];
        if (major instanceof BigInteger || (Long) major > newest) {
            throw new BundleException("bundle format version " + major + "." + minor
                    + " is newer than this runtime supports (" + READABLE_MAJORS + "); upgrade dpedge to read it");
        }
        boolean known = false;
        for (long m : SUPPORTED_MAJORS) {
            known |= (Long) major == m;
        }
        if (!known) {
            throw new BundleException("bundle format version " + major + "." + minor
                    + " is not supported (this runtime reads " + READABLE_MAJORS + ")");
        }
        // A newer minor version only adds fields; they are ignored.
        return (Long) major;
    }

    // ------------------------------------------------------------------ payload

    /** Required privacy fields and their types, in the order Python checks them. */
    private static final Object[][] PRIVACY_REQUIRED = {
        {"epsilon", new Kind[] {Kind.FLOAT, Kind.INTEGER}},
        {"delta", new Kind[] {Kind.FLOAT, Kind.INTEGER}},
        {"mechanism", new Kind[] {Kind.STRING}},
        {"sensitivity_l1", new Kind[] {Kind.INTEGER}},
        {"noise_scale", new Kind[] {Kind.FLOAT, Kind.INTEGER}},
        {"neighbour_relation", new Kind[] {Kind.STRING}},
        {"privacy_unit", new Kind[] {Kind.STRING}},
        {"noise_source", new Kind[] {Kind.STRING}},
    };

    static Bundle validatePayload(Fields p, long major) throws BundleException {
        List<String> labels = strList(p, "labels", false);
        if (labels.size() < 2 || new HashSet<>(labels).size() != labels.size() || labels.contains("")) {
            throw new BundleException("field 'labels' must hold at least two distinct, non-empty labels");
        }
        checkPrintable(labels, "labels", MAX_LABEL_CHARS);
        List<String> descriptions = strList(p, "label_descriptions", true);
        if (descriptions != null && descriptions.size() != labels.size()) {
            throw new BundleException("field 'label_descriptions' has " + descriptions.size() + " entries for "
                    + labels.size() + " labels");
        }
        if (descriptions != null) {
            checkPrintable(descriptions, "label_descriptions", MAX_DESCRIPTION_CHARS);
        }

        Fields privacy = p.sub("privacy");
        for (Object[] req : PRIVACY_REQUIRED) {
            privacy.get((String) req[0], (Kind[]) req[1]);
        }
        double eps = Fields.toDouble(privacy.m.get("epsilon"));
        if (!(eps > 0 && !Double.isInfinite(eps))) {
            throw new BundleException("field 'privacy.epsilon' must be a positive finite number, got "
                    + Msgpack.pyFloat(eps));
        }
        Object delta = privacy.m.get("delta");
        if (!(Fields.toDouble(delta) == 0)) {  // NaN is refused too
            throw new BundleException("field 'privacy.delta' is " + Msgpack.repr(delta)
                    + ": only pure epsilon-DP bundles (delta = 0) exist");
        }

        // Format 1.2: with a privacy unit of one person (up to K records), the sensitivity is K*T.
        Object perUnitField = privacy.optional("max_records_per_unit", Kind.INTEGER);
        Object perUnit = perUnitField == null ? Long.valueOf(1) : perUnitField;
        if (perUnit instanceof Long && (Long) perUnit < 1) {
            throw new BundleException("field 'privacy.max_records_per_unit' is " + perUnit + ", expected at least 1");
        }

        // The hashing and the vote tables: required before format 3, optional from it (read
        // when either field is there). Without them the embedding size is the encoder's.
        Tables t = null;
        Object dimV;
        if (major < VOTES_OPTIONAL_FROM || p.m.containsKey("lsh") || p.m.containsKey("votes")) {
            t = readTables(p, privacy, labels.size(), perUnit);
            dimV = t.dimV;
        } else {
            dimV = p.sub("encoder").integer("dim");
        }
        Bundle.ClassStats classStats = p.m.containsKey("class_stats") ? readClassStats(p, labels.size(), dimV) : null;
        if (t == null && classStats == null) {
            throw new BundleException("a bundle without vote tables ('votes') must hold 'class_stats': it has nothing "
                    + "to classify with");
        }
        // Fits an int: the hyperplanes' or the projection's data holds dim floats per row.
        int dim = t != null ? t.dim : classStats.dim();
        PrivacyFacts.checkReleases(privacy, eps, classStats != null, t != null, perUnit);
        PrivacyFacts.checkTopLevel(privacy, eps);
        float[] prior = null;
        if (p.m.containsKey("prior")) {
            ArrayRecord pr = ArrayRecord.read(p.sub("prior").sub("embeddings"), FLOAT_DTYPE, 2);
            prior = pr.shapeIs((long) labels.size(), (long) dim) ? pr.floats() : null;
            if (prior == null || !allFinite(prior)) {
                throw new BundleException("field 'prior.embeddings' must be finite with shape "
                        + tuple(labels.size(), dim) + ", got " + pr.tuple());
            }
        }
        Object scoringV = p.optional("scoring", Kind.MAP);
        if (scoringV != null) {
            for (Object v : ((Map<?, ?>) scoringV).values()) {
                if (!(v instanceof String) && !isFiniteNonNegative(v)) {
                    throw new BundleException("field 'scoring' must map names to finite non-negative numbers");
                }
            }
            checkScoring((Map<?, ?>) scoringV, classStats != null);
        }

        Bundle.Encoder encoder = readEncoder(p.sub("encoder"), dimV);
        Map<String, Object> exporter = publicMap(p.get("exporter", Kind.MAP));

        Map<String, Object> lshPublic = null;
        if (t != null) {
            lshPublic = new LinkedHashMap<>();
            for (Map.Entry<String, Object> e : t.lsh.m.entrySet()) {
                if (!e.getKey().equals("hyperplanes") && !e.getKey().equals("offsets")) {
                    lshPublic.put(e.getKey(), toPublic(e.getValue()));
                }
            }
            lshPublic = Collections.unmodifiableMap(lshPublic);
        }
        return new Bundle(labels, descriptions, publicMap(privacy.m), lshPublic,
                t == null ? 0 : t.tables, t == null ? 0 : t.bits, dim, t == null ? null : t.hyperplanes,
                t == null ? null : t.votes, encoder, exporter, t == null ? null : t.offsets, classStats, prior,
                scoringV == null ? null : publicMap(scoringV));
    }

    /** What {@link #readTables} reads: the {@code lsh} map, its sizes, hyperplanes, offsets and the votes. */
    private static final class Tables {
        Fields lsh;
        Object dimV;
        int tables;
        int bits;
        int dim;
        float[] hyperplanes;
        float[] offsets;
        short[] votes;
    }

    /**
     * The hashing and the vote tables (Python's {@code _read_tables}): {@code lsh}'s family and
     * sizes, the hyperplanes, the votes, the sensitivity a record has in them ({@code K * T}
     * with K records per person), then the optional offsets, in Python's order and with its
     * messages.
     */
    private static Tables readTables(Fields p, Fields privacy, int classes, Object perUnit) throws BundleException {
        Tables t = new Tables();
        Fields lsh = p.sub("lsh");
        t.lsh = lsh;
        String family = lsh.string("family");
        if (!"simhash".equals(family)) {
            throw new BundleException("field 'lsh.family' is " + Msgpack.repr(family) + ", expected 'simhash'");
        }
        Object tablesV = lsh.integer("tables");
        Object bitsV = lsh.integer("bits");
        Object dimV = lsh.integer("dim");
        boolean dimOk = dimV instanceof BigInteger || (Long) dimV >= 1;
        if (!(Fields.inRange(bitsV, 1, MAX_BITS) && Fields.inRange(tablesV, 1, MAX_TABLES) && dimOk)) {
            throw new BundleException("LSH parameters out of range: tables=" + tablesV + ", bits=" + bitsV
                    + ", dim=" + dimV);
        }
        int tables = (int) (long) (Long) tablesV;
        int bits = (int) (long) (Long) bitsV;
        ArrayRecord hp = ArrayRecord.read(lsh.sub("hyperplanes"), FLOAT_DTYPE, 3);
        if (!hp.shapeIs(tablesV, bitsV, dimV)) {
            throw new BundleException("field 'lsh.hyperplanes' has shape " + hp.tuple() + ", expected "
                    + tuple(tablesV, bitsV, dimV));
        }
        int dim = (int) hp.dims[2];  // fits: the data holds tables * bits * dim floats
        float[] hyperplanes = hp.floats();
        for (float v : hyperplanes) {
            if (Float.isNaN(v) || Float.isInfinite(v)) {
                throw new BundleException("field 'lsh.hyperplanes' holds non-finite values");
            }
        }
        long buckets = 1L << bits;
        ArrayRecord vr = ArrayRecord.read(p.sub("votes"), VOTES_DTYPE, 3);
        if (!vr.shapeIs((long) tables, buckets, (long) classes)) {
            throw new BundleException("field 'votes' has shape " + vr.tuple() + ", expected "
                    + tuple(tables, buckets, classes));
        }
        Object sensitivity = privacy.m.get("sensitivity_l1");
        boolean matches = perUnit instanceof Long && (Long) perUnit <= Integer.MAX_VALUE
                && Fields.isEqual(sensitivity, (Long) perUnit * tables);
        if (!matches) {
            boolean person = !(perUnit instanceof Long) || (Long) perUnit > 1;
            throw new BundleException("field 'privacy.sensitivity_l1' is " + sensitivity
                    + " but a record touches one cell in each of " + tables + " tables"
                    + (person ? ", for each of the up to " + perUnit + " records of a person" : ""));
        }
        t.votes = vr.shorts();
        if (lsh.m.containsKey("offsets")) {
            ArrayRecord or = ArrayRecord.read(lsh.sub("offsets"), FLOAT_DTYPE, 2);
            t.offsets = or.shapeIs((long) tables, (long) bits) ? or.floats() : null;
            if (t.offsets == null || !allFinite(t.offsets)) {
                throw new BundleException("field 'lsh.offsets' must be finite with shape " + tuple(tables, bits)
                        + ", got " + or.tuple());
            }
        }
        t.dimV = dimV;
        t.tables = tables;
        t.bits = bits;
        t.dim = dim;
        t.hyperplanes = hyperplanes;
        return t;
    }

    /**
     * The {@code class_stats} of formats 2 and 3 (Python's {@code _read_class_stats}):
     * {@code projection} (k x dim) is read first for k, then 1 <= k <= dim is checked on it, then
     * its shape and finite values, then origin, sums and counts must each have their shape and
     * finite values. {@code dimV} is the embedding size (a Long or BigInteger, from {@code lsh}
     * or, without vote tables, {@code encoder.dim}, which nothing has bounded yet).
     */
    private static Bundle.ClassStats readClassStats(Fields p, int classes, Object dimV) throws BundleException {
        Fields cs = p.sub("class_stats");
        ArrayRecord projection = ArrayRecord.read(cs.sub("projection"), FLOAT_DTYPE, 2);
        Object k = projection.shape.get(0);
        if (!(k instanceof Long && (Long) k >= 1 && (dimV instanceof BigInteger || (Long) k <= (Long) dimV))) {
            throw new BundleException("field 'class_stats.projection' must have 1 to " + dimV
                    + " rows (the embedding size), got " + k);
        }
        String[] names = {"projection", "origin", "sums", "counts"};
        Object[][] shapes = {{k, dimV}, {dimV}, {(long) classes, k}, {(long) classes}};
        float[][] values = new float[4][];
        for (int i = 0; i < names.length; i++) {
            ArrayRecord a = i == 0 ? projection : ArrayRecord.read(cs.sub(names[i]), FLOAT_DTYPE, shapes[i].length);
            values[i] = a.shapeIs(shapes[i]) ? a.floats() : null;
            if (values[i] == null || !allFinite(values[i])) {
                throw new BundleException("field 'class_stats." + names[i] + "' must be finite with shape "
                        + tuple(shapes[i]) + ", got " + a.tuple());
            }
        }
        // dim fits an int here: the projection's data holds k * dim floats
        return new Bundle.ClassStats((int) (long) (Long) k, (int) (long) (Long) dimV, values[1], values[0], values[2],
                values[3]);
    }

    /**
     * Labels and descriptions reach terminals: bounded, and without control characters, line
     * separators or bidirectional controls (Python's {@code _check_printable}).
     */
    private static void checkPrintable(List<String> texts, String where, int most) throws BundleException {
        for (int i = 0; i < texts.size(); i++) {
            String t = texts.get(i);
            int len = t.codePointCount(0, t.length());
            if (len > most) {
                throw new BundleException("field '" + where + "[" + i + "]' has " + len + " characters, more than "
                        + most);
            }
            for (int j = 0; j < t.length(); ) {
                int cp = t.codePointAt(j);
                j += Character.charCount(cp);
                for (int[] range : UNPRINTABLE_CODE_POINTS) {
                    if (cp >= range[0] && cp <= range[1]) {
                        throw new BundleException("field '" + where + "[" + i + "]' holds control character U+"
                                + String.format(java.util.Locale.ROOT, "%04X", cp) + ", which a terminal would act on");
                    }
                }
            }
        }
    }

    /**
     * Format 2.1's {@code scoring} checks ({@code _check_scoring} in Python), after every value
     * was found to be a string or a finite non-negative number, in Python's order: a name the
     * scorer reads as a number ({@link Scorer#SCORING_NUMBERS}, in that order) must not be a
     * string; {@code centroid_rule} (default "cosine") must be one of
     * {@link Scorer#CENTROID_RULES}; each of those numbers (again in that order) must be at most
     * {@link Scorer#SCORING_MAX} (1e6); {@code centroid_temperature}, then
     * {@code prior_temperature}, must be at least {@link Scorer#TEMPERATURE_MIN} (1e-6); the
     * Gaussian rule needs a positive {@code centroid_clip_l1}; and (format 3.0)
     * {@code prior_boost_rule} (default "max") must be one of {@link Scorer#PRIOR_BOOST_RULES},
     * "linear" only in a bundle with class statistics (it reads their released counts).
     *
     * <p>Why in the reader rather than only in the scorer: the bounds keep the blend finite (a
     * weight or {@code prior_records_per_class} of 1e308, or a temperature of 0 or 5e-324, would
     * overflow a score or a logit to infinity, and the softmax of infinities is NaN), a Gaussian
     * rule without a clip would compare an unclipped query with means released on the clipped
     * scale, and an unknown rule cannot be scored at all; refusing such a bundle at load, with
     * Python's message, keeps a phone from accepting a file the laptop refuses (and from
     * failing later, at the first query). The bounds sit far outside anything measured.
     */
    private static void checkScoring(Map<?, ?> scoring, boolean hasClassStats) throws BundleException {
        for (String name : Scorer.SCORING_NUMBERS) {
            if (scoring.get(name) instanceof String) {
                throw new BundleException("field 'scoring." + name + "' must be a number, got str");
            }
        }
        Object rule = scoring.containsKey("centroid_rule") ? scoring.get("centroid_rule") : Scorer.COSINE;
        if (!Scorer.CENTROID_RULES.contains(rule)) {
            throw new BundleException("field 'scoring.centroid_rule' must be one of "
                    + String.join(", ", Scorer.CENTROID_RULES) + ", got " + Msgpack.repr(rule));
        }
        for (String name : Scorer.SCORING_NUMBERS) {
            if (scoring.containsKey(name) && isAbove(scoring.get(name), Scorer.SCORING_MAX)) {
                throw new BundleException("field 'scoring." + name + "' must be at most 1e6");
            }
        }
        for (String name : new String[] {"centroid_temperature", "prior_temperature"}) {
            if (scoring.containsKey(name) && isBelow(scoring.get(name), Scorer.TEMPERATURE_MIN)) {
                throw new BundleException("field 'scoring." + name + "' must be at least 1e-6");
            }
        }
        if (Scorer.GAUSSIAN.equals(rule) && (!scoring.containsKey("centroid_clip_l1")
                || isZero(scoring.get("centroid_clip_l1")))) {
            throw new BundleException("field 'scoring.centroid_clip_l1' must be positive for the gaussian centroid rule");
        }
        Object boost = scoring.containsKey("prior_boost_rule") ? scoring.get("prior_boost_rule") : Scorer.MAX;
        if (!Scorer.PRIOR_BOOST_RULES.contains(boost)) {
            throw new BundleException("field 'scoring.prior_boost_rule' must be one of "
                    + String.join(", ", Scorer.PRIOR_BOOST_RULES) + ", got " + Msgpack.repr(boost));
        }
        if (Scorer.LINEAR.equals(boost) && !hasClassStats) {
            throw new BundleException("field 'scoring.prior_boost_rule' is 'linear', which needs the released class "
                    + "counts of 'class_stats'");
        }
    }

    /**
     * Python's {@code v > bound} for a value that passed the scoring checks (a Long, Double or
     * BigInteger, finite and non-negative): exact for an integer, as Python compares an int with
     * a float (a long converts to double monotonically and 1e6 is exact, so none rounds across
     * it; a BigInteger is above Long.MAX_VALUE).
     */
    private static boolean isAbove(Object v, double bound) {
        if (v instanceof BigInteger) {
            return true;
        }
        return v instanceof Long ? (Long) v > bound : v instanceof Double && (Double) v > bound;
    }

    /**
     * Python's {@code v < bound} for a value that passed the scoring checks, with
     * {@code 0 < bound < 1}: an integer is below only if it is 0 (a BigInteger never is).
     */
    private static boolean isBelow(Object v, double bound) {
        if (v instanceof Long) {
            return (Long) v < bound;
        }
        return v instanceof Double && (Double) v < bound;
    }

    /** Python's {@code v == 0} for a value that passed the scoring checks: 0, 0.0 or -0.0 (null: absent). */
    private static boolean isZero(Object v) {
        return v instanceof Long && (Long) v == 0 || v instanceof Double && (Double) v == 0;
    }

    private static boolean allFinite(float[] values) {
        for (float v : values) {
            if (Float.isNaN(v) || Float.isInfinite(v)) {
                return false;
            }
        }
        return true;
    }

    /** A {@code scoring} value Python accepts: an integer or float (not a boolean), finite and >= 0. */
    private static boolean isFiniteNonNegative(Object v) {
        if (v instanceof BigInteger) {
            return true;  // above Long.MAX_VALUE
        }
        if (v instanceof Long) {
            return (Long) v >= 0;
        }
        if (v instanceof Double) {
            double d = (Double) v;
            return !Double.isNaN(d) && !Double.isInfinite(d) && d >= 0;
        }
        return false;
    }

    private static Bundle.Encoder readEncoder(Fields enc, Object dimV) throws BundleException {
        String format = enc.string("format");
        if (!ENCODER_FORMATS.contains(format)) {
            throw new BundleException("encoder format " + Msgpack.repr(format)
                    + " is not supported by this runtime (supports onnx, tflite)");
        }
        List<String> inputs = strList(enc, "inputs", false);
        Msgpack.Bin model = (Msgpack.Bin) enc.get("model", Kind.BIN);
        String tokenizerJson = enc.string("tokenizer_json");
        Object maxLength = enc.integer("max_length");
        Object encDim = enc.integer("dim");
        String pooling = enc.string("pooling");
        boolean normalized = (Boolean) enc.get("normalized", Kind.BOOLEAN);
        String output = enc.string("output");
        Map<String, Object> facts = publicMap(enc.get("facts", Kind.MAP));

        String checkText = null;
        float[] checkEmbedding = null;
        if (enc.optional("check", Kind.MAP) != null) {
            Fields check = enc.sub("check");
            checkText = check.string("text");
            int chars = checkText.codePointCount(0, checkText.length());
            if (chars > MAX_CHECK_TEXT_CHARS) {
                throw new BundleException("field 'encoder.check.text' has " + chars + " characters, more than "
                        + MAX_CHECK_TEXT_CHARS);
            }
            ArrayRecord emb = ArrayRecord.read(check.sub("embedding"), FLOAT_DTYPE, 1);
            boolean ok = !PyText.isBlank(checkText) && emb.shapeIs(dimV);
            if (ok) {
                checkEmbedding = emb.floats();
                double sq = 0;
                for (float v : checkEmbedding) {
                    ok &= !Float.isNaN(v) && !Float.isInfinite(v);
                    sq += (double) v * v;
                }
                double norm = Math.sqrt(sq);
                ok &= norm > 0.9 && norm < 1.1;
            }
            if (!ok) {
                throw new BundleException("field 'encoder.check' must hold a non-empty text and a finite unit "
                        + dimV + "-d embedding");
            }
        }
        if (!encDim.equals(dimV)) {
            throw new BundleException("encoder produces " + encDim + "-d embeddings but the hyperplanes are "
                    + dimV + "-d");
        }
        if (encDim instanceof Long && (Long) encDim < 1) {  // as Python; the class statistics refuse it first
            throw new BundleException("field 'encoder.dim' is " + encDim + ", expected at least 1");
        }
        if (!Fields.inRange(maxLength, 2, 8192)) {
            throw new BundleException("field 'encoder.max_length' is " + maxLength + ", expected 2..8192");
        }
        if (model.length == 0) {
            throw new BundleException("field 'encoder.model' is empty");
        }
        Set<String> unknown = new TreeSet<>(inputs);
        unknown.removeAll(KNOWN_INPUTS);
        if (!unknown.isEmpty()) {
            throw new BundleException("encoder declares unsupported inputs "
                    + Msgpack.repr(new ArrayList<Object>(unknown)));
        }
        int outputChars = output.codePointCount(0, output.length());
        boolean printable = output.codePoints().allMatch(Msgpack::isPrintable);  // Python's str.isprintable
        if (outputChars < 1 || outputChars > MAX_NAME_CHARS || !printable) {
            throw new BundleException("field 'encoder.output' must be a printable name of 1 to " + MAX_NAME_CHARS
                    + " characters, got " + Msgpack.repr(output));
        }
        // The declared families (docs/bundle-format.md section 10), last: they read the most bytes.
        TokenizerFamily.check(tokenizerJson);
        ModelFamily.check(format, model);
        return new Bundle.Encoder(format, model.copy(), tokenizerJson, (int) (long) (Long) maxLength,
                (int) (long) (Long) encDim, pooling, normalized, inputs, output, facts, checkText, checkEmbedding);
    }

    /** A list of strings; the message names the dotted field path, as in Python. */
    private static List<String> strList(Fields f, String key, boolean optional) throws BundleException {
        List<?> v = (List<?>) (optional ? f.optional(key, Kind.ARRAY) : f.get(key, Kind.ARRAY));
        if (v == null) {
            return null;
        }
        List<String> out = new ArrayList<>(v.size());
        for (Object s : v) {
            if (!(s instanceof String)) {
                throw new BundleException("field '" + f.where(key) + "' must be a list of strings");
            }
            out.add((String) s);
        }
        return Collections.unmodifiableList(out);
    }

    /** A shape as Python prints a tuple: "(32, 6, 384)", "(384,)". */
    static String tuple(Object... dims) {
        StringBuilder sb = new StringBuilder("(");
        for (int i = 0; i < dims.length; i++) {
            sb.append(i == 0 ? "" : ", ").append(dims[i]);
        }
        return sb.append(dims.length == 1 ? ",)" : ")").toString();
    }

    // ------------------------------------------------------------------ public values

    @SuppressWarnings("unchecked")
    private static Map<String, Object> publicMap(Object m) {
        return (Map<String, Object>) toPublic(m);
    }

    /** A parsed value with binary views copied out, so nothing public aliases the file bytes. */
    static Object toPublic(Object v) {
        if (v instanceof Msgpack.Bin) {
            return ((Msgpack.Bin) v).copy();
        } else if (v instanceof List) {
            List<Object> out = new ArrayList<>();
            for (Object x : (List<?>) v) {
                out.add(toPublic(x));
            }
            return Collections.unmodifiableList(out);
        } else if (v instanceof Map) {
            Map<String, Object> out = new LinkedHashMap<>();
            for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
                out.put((String) e.getKey(), toPublic(e.getValue()));
            }
            return Collections.unmodifiableMap(out);
        }
        return v;
    }

    // ------------------------------------------------------------------ array records

    /**
     * One {@code {dtype, shape, data}} record whose byte count has been checked against its
     * dtype and shape; the elements are decoded (little-endian) only on request.
     */
    static final class ArrayRecord {
        final String path;
        final long[] dims;
        final List<?> shape;
        final Msgpack.Bin data;

        private ArrayRecord(String path, long[] dims, List<?> shape, Msgpack.Bin data) {
            this.path = path;
            this.dims = dims;
            this.shape = shape;
            this.data = data;
        }

        static ArrayRecord read(Fields f, String dtype, int ndim) throws BundleException {
            String actual = f.string("dtype");
            if (!dtype.equals(actual)) {
                throw new BundleException("field '" + f.where("dtype") + "' is " + Msgpack.repr(actual)
                        + ", expected '" + dtype + "'");
            }
            List<?> shape = (List<?>) f.get("shape", Kind.ARRAY);
            boolean ok = shape.size() == ndim;
            for (Object s : shape) {
                ok &= s instanceof BigInteger || s instanceof Long && (Long) s >= 0;
            }
            if (!ok) {
                throw new BundleException("field '" + f.where("shape") + "' must be " + ndim
                        + " non-negative integers, got " + Msgpack.repr(shape));
            }
            Msgpack.Bin data = (Msgpack.Bin) f.get("data", Kind.BIN);
            int itemsize = dtype.equals(VOTES_DTYPE) ? 2 : 4;
            long[] dims = new long[ndim];
            long expected = itemsize;  // -1: the product overflows a long, so no data can match
            boolean zero = false;
            for (int i = 0; i < ndim; i++) {
                Object s = shape.get(i);
                dims[i] = s instanceof Long ? (Long) s : -1;
                zero |= dims[i] == 0;
                if (expected >= 0) {
                    try {
                        expected = dims[i] < 0 ? -1 : Math.multiplyExact(expected, dims[i]);
                    } catch (ArithmeticException overflow) {
                        expected = -1;
                    }
                }
            }
            if (zero) {
                expected = 0;
            }
            if (expected != data.length) {
                BigInteger exact = BigInteger.valueOf(itemsize);  // only for the message
                for (Object s : shape) {
                    exact = exact.multiply(s instanceof BigInteger ? (BigInteger) s : BigInteger.valueOf((Long) s));
                }
                throw new BundleException("field '" + f.where("data") + "' has " + data.length
                        + " bytes, but dtype " + dtype + " and shape " + Msgpack.repr(shape) + " need " + exact);
            }
            return new ArrayRecord(f.path, dims, shape, data);
        }

        /** Whether the shape equals the given integer values (Long or BigInteger). */
        boolean shapeIs(Object... expected) {
            if (expected.length != dims.length) {
                return false;
            }
            for (int i = 0; i < dims.length; i++) {
                if (!(expected[i] instanceof Long) || (Long) expected[i] != dims[i]) {
                    return false;
                }
            }
            return true;
        }

        String tuple() {
            return BundleReader.tuple(shape.toArray());
        }

        float[] floats() {
            float[] out = new float[data.length / 4];
            data.buffer().order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer().get(out);
            return out;
        }

        short[] shorts() {
            short[] out = new short[data.length / 2];
            data.buffer().order(ByteOrder.LITTLE_ENDIAN).asShortBuffer().get(out);
            return out;
        }
    }
}
