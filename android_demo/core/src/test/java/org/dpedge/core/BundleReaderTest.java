package org.dpedge.core;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.io.File;
import java.math.BigInteger;
import java.nio.file.Files;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Consumer;

import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

/** The reader on small synthetic bundles: what it accepts, and the message of each refusal. */
public class BundleReaderTest {
    @Rule
    public TemporaryFolder tmp = new TemporaryFolder();

    @Test
    public void readsAValidBundle() throws Exception {
        Bundle b = BundleReader.read(TestBundles.validBundle());
        assertEquals(Arrays.asList("alarm", "music", "weather"), b.labels());
        assertEquals("play music", b.labelDescriptions().get(1));
        assertEquals(8.0, b.epsilon(), 0);
        assertEquals("one record", b.privacy().get("privacy_unit"));
        assertEquals(Arrays.asList("votes"), b.privacy().get("released_statistics"));
        assertEquals(new BigInteger("18446744073709551615"), b.lsh().get("seed"));
        assertTrue(!b.lsh().containsKey("hyperplanes"));
        assertEquals(2, b.tables());
        assertEquals(2, b.bits());
        assertEquals(3, b.dim());
        assertArrayEquals(new float[] {1, 0, 0, 0, 1, 0, 0, 0, 1, -1, 0, 0}, b.hyperplanes(), 0);
        short[] votes = b.votes();
        assertEquals(24, votes.length);
        assertEquals(-3, votes[0]);
        assertEquals(-32768, votes[5]);  // little-endian int16 extremes survive
        assertEquals(32767, votes[6]);
        Bundle.Encoder e = b.encoder();
        assertEquals("onnx", e.format());
        assertArrayEquals(TestBundles.TINY_ONNX, e.model());
        assertEquals(16, e.maxLength());
        assertEquals(Arrays.asList("input_ids", "attention_mask"), e.inputs());
        assertEquals("wake me up", e.checkText());
        assertArrayEquals(new float[] {0.6f, 0.8f, 0f}, e.checkEmbedding(), 0);
        assertEquals("dpedge", b.exporter().get("name"));
    }

    @Test
    public void readsAFile() throws Exception {
        File f = tmp.newFile("ok.dpedge");
        Files.write(f.toPath(), TestBundles.validBundle());
        assertEquals(3, BundleReader.read(f).labels().size());
    }

    @Test
    public void fileErrorsNameThePath() throws Exception {
        File missing = new File(tmp.getRoot(), "missing.dpedge");
        expectError(() -> BundleReader.read(missing), missing + ": no such bundle file");
        expectError(() -> BundleReader.read(tmp.getRoot()), "is a directory, not a bundle file");
        File bad = tmp.newFile("bad.dpedge");
        Files.write(bad.toPath(), new byte[] {(byte) 0x91});
        expectError(() -> BundleReader.read(bad), bad + ": bundle is truncated (1 bytes)");
    }

    @Test
    public void ignoresUnknownFieldsAndAcceptsAnyMinorVersion() throws Exception {
        Map<String, Object> p = TestBundles.payload();
        p.put("future_field", TestBundles.list(1L, "x"));
        TestBundles.sub(p, "encoder").put("new_encoder_fact", new LinkedHashMap<String, Object>());
        Map<String, Object> outer = TestBundles.outer(TestBundles.pack(p));
        outer.put("version", TestBundles.list(1L, 99L));
        outer.put("comment", "added by a later writer");
        assertEquals(3, BundleReader.read(TestBundles.pack(outer)).labels().size());
    }

    @Test
    public void acceptsAFormat10BundleWithoutCheckOrDescriptions() throws Exception {
        Map<String, Object> p = TestBundles.payload();
        TestBundles.sub(p, "encoder").remove("check");
        p.put("label_descriptions", null);
        Bundle b = BundleReader.read(TestBundles.seal(p));
        assertNull(b.encoder().checkText());
        assertNull(b.encoder().checkEmbedding());
        assertNull(b.labelDescriptions());
    }

    @Test
    public void refusesWrongOuterLayers() {
        expectError(() -> BundleReader.read(new byte[0]), "bundle is truncated (0 bytes): the file was cut short");
        byte[] valid = TestBundles.validBundle();
        expectError(() -> BundleReader.read(Arrays.copyOf(valid, valid.length / 2)), "truncated");
        expectError(() -> BundleReader.read(Arrays.copyOf(valid, valid.length - 1)), "truncated");
        byte[] longer = Arrays.copyOf(valid, valid.length + 3);
        expectError(() -> BundleReader.read(longer), "bundle has 3 unexpected trailing bytes");
        expectError(() -> BundleReader.read(TestBundles.pack(TestBundles.list(1L, 2L))),
                "bundle is not a dpedge bundle: top level is array, expected a map");
        expectError(() -> BundleReader.read("not a bundle".getBytes()), "top level is integer, expected a map");
        expectError(() -> BundleReader.read(new byte[] {(byte) 0xc1}), "bundle is not valid msgpack");
        expectError(() -> BundleReader.read(new byte[] {(byte) 0xdc, (byte) 0xff, (byte) 0xff}),
                "not valid msgpack (ValueError: 65535 exceeds max_array_len(3))");
        expectError(() -> BundleReader.read(new byte[] {(byte) 0xc7, 1, 5, 0}), "unexpected msgpack extension type 5");
        expectError(() -> BundleReader.read(new byte[] {(byte) 0x81, 1, 2}), "not valid msgpack");
        expectError(() -> BundleReader.read(new byte[] {(byte) 0xa2, (byte) 0xff, (byte) 0xfe}),
                "not valid msgpack (UnicodeDecodeError");
    }

    @Test
    public void refusesDeepNestingWithoutOverflowingTheStack() {
        byte[] deep = new byte[100_000];
        Arrays.fill(deep, (byte) 0x91);
        expectError(() -> BundleReader.read(deep), "not valid msgpack (StackError");
    }

    @Test
    public void checksVersionAndChecksum() {
        expectOuter(o -> o.put("format", "zip"), "not a dpedge bundle: field 'format' is 'zip', expected 'dpedge-bundle'");
        expectOuter(o -> o.put("version", TestBundles.list(5L, 0L)),
                "bundle format version 5.0 is newer than this runtime supports (1.x and 2.x and 3.x and 4.x); upgrade "
                + "dpedge to read it");
        expectOuter(o -> o.put("version", TestBundles.list(new BigInteger("18446744073709551615"), 0L)),
                "bundle format version 18446744073709551615.0 is newer than this runtime supports");
        expectOuter(o -> o.put("version", TestBundles.list(0L, 9L)),
                "bundle format version 0.9 is not supported (this runtime reads 1.x and 2.x and 3.x and 4.x)");
        expectOuter(o -> o.put("version", TestBundles.list(-1L, 0L)), "bundle format version -1.0 is not supported");
        expectOuter(o -> o.put("version", TestBundles.list(1L)), "field 'version' must be [major, minor], got [1]");
        expectOuter(o -> o.put("version", TestBundles.list(true, 1L)), "must be [major, minor], got [True, 1]");
        expectOuter(o -> o.put("version", "1.1"), "field 'version' is string, expected array");
        expectOuter(o -> o.remove("checksum"), "missing field 'checksum'");
        expectOuter(o -> TestBundles.sub(o, "checksum").put("algorithm", "md5"), "unsupported checksum algorithm 'md5'");
        expectOuter(o -> TestBundles.sub(o, "checksum").put("digest", new byte[32]), "checksum mismatch");
        expectOuter(o -> o.put("payload", "text"), "field 'payload' is string, expected bin");
    }

    @Test
    public void validatesThePayloadLikePython() {
        expectPayload(p -> p.remove("labels"), "missing field 'labels'");
        expectPayload(p -> p.put("labels", "alarm"), "field 'labels' is string, expected array");
        expectPayload(p -> p.put("labels", TestBundles.list("a", 1L)), "field 'labels' must be a list of strings");
        expectPayload(p -> p.put("labels", TestBundles.list("a")), "at least two distinct, non-empty labels");
        expectPayload(p -> p.put("labels", TestBundles.list("a", "a", "b")), "at least two distinct");
        expectPayload(p -> p.put("labels", TestBundles.list("a", "", "b")), "non-empty labels");
        expectPayload(p -> p.put("label_descriptions", TestBundles.list("x")),
                "field 'label_descriptions' has 1 entries for 3 labels");
        expectPayload(p -> p.put("privacy", TestBundles.list(1L)), "field 'privacy' is array, expected map");
        expectPayload(p -> TestBundles.sub(p, "privacy").remove("noise_source"), "missing field 'privacy.noise_source'");
        expectPayload(p -> TestBundles.sub(p, "privacy").put("epsilon", "8"),
                "field 'privacy.epsilon' is string, expected float or integer");
        expectPayload(p -> TestBundles.sub(p, "privacy").put("epsilon", true), "is boolean, expected float or integer");
        expectPayload(p -> TestBundles.sub(p, "privacy").put("epsilon", 0L),
                "field 'privacy.epsilon' must be a positive finite number, got 0.0");
        expectPayload(p -> TestBundles.sub(p, "privacy").put("epsilon", Double.POSITIVE_INFINITY), "got inf");
        expectPayload(p -> TestBundles.sub(p, "privacy").put("epsilon", Double.NaN), "positive finite number, got nan");
        expectPayload(p -> TestBundles.sub(p, "privacy").put("delta", 1e-6),
                "field 'privacy.delta' is 1e-06: only pure epsilon-DP bundles (delta = 0) exist");
        expectPayload(p -> TestBundles.sub(p, "privacy").put("sensitivity_l1", 1L),
                "field 'privacy.sensitivity_l1' is 1 but a record touches one cell in each of 2 tables");
        expectPayload(p -> TestBundles.sub(p, "lsh").put("family", "minhash"),
                "field 'lsh.family' is 'minhash', expected 'simhash'");
        expectPayload(p -> TestBundles.sub(p, "lsh").put("bits", 25L),
                "LSH parameters out of range: tables=2, bits=25, dim=3");
        expectPayload(p -> TestBundles.sub(p, "lsh").put("tables", true),
                "field 'lsh.tables' is boolean, expected integer");
        expectPayload(p -> TestBundles.sub(p, "lsh").remove("hyperplanes"), "missing field 'lsh.hyperplanes'");
        expectPayload(p -> TestBundles.sub(p, "lsh.hyperplanes").put("dtype", ">f4"),
                "field 'lsh.hyperplanes.dtype' is '>f4', expected '<f4'");
        expectPayload(p -> TestBundles.sub(p, "lsh.hyperplanes").put("shape", TestBundles.list(2L, 2L)),
                "field 'lsh.hyperplanes.shape' must be 3 non-negative integers, got [2, 2]");
        expectPayload(p -> TestBundles.sub(p, "lsh.hyperplanes").put("shape", TestBundles.list(2L, -2L, 3L)),
                "must be 3 non-negative integers, got [2, -2, 3]");
        expectPayload(p -> TestBundles.sub(p, "lsh.hyperplanes").put("shape", TestBundles.list(4L, 1L, 3L)),
                "field 'lsh.hyperplanes' has shape (4, 1, 3), expected (2, 2, 3)");
        expectPayload(p -> TestBundles.sub(p, "lsh.hyperplanes").put("data",
                TestBundles.floats(1, 0, 0, 0, 1, 0, 0, 0, Float.NaN, -1, 0, 0)),
                "field 'lsh.hyperplanes' holds non-finite values");
        expectPayload(p -> TestBundles.sub(p, "votes").put("dtype", "<i4"), "field 'votes.dtype' is '<i4', expected '<i2'");
        expectPayload(p -> TestBundles.sub(p, "votes").put("data", new byte[46]),
                "field 'votes.data' has 46 bytes, but dtype <i2 and shape [2, 4, 3] need 48");
        expectPayload(p -> TestBundles.sub(p, "votes").put("shape", TestBundles.list(2L, 3L, 4L)),
                "field 'votes' has shape (2, 3, 4), expected (2, 4, 3)");
        expectPayload(p -> TestBundles.sub(p, "encoder").put("format", "coreml"),
                "encoder format 'coreml' is not supported by this runtime (supports onnx, tflite)");
        expectPayload(p -> TestBundles.sub(p, "encoder").put("inputs", TestBundles.list("input_ids", "pixels", "audio")),
                "encoder declares unsupported inputs ['audio', 'pixels']");
        expectPayload(p -> TestBundles.sub(p, "encoder").put("inputs", TestBundles.list(1L)),
                "field 'encoder.inputs' must be a list of strings");
        expectPayload(p -> TestBundles.sub(p, "encoder").put("normalized", 1L),
                "field 'encoder.normalized' is integer, expected boolean");
        expectPayload(p -> TestBundles.sub(p, "encoder").put("dim", 4L),
                "encoder produces 4-d embeddings but the hyperplanes are 3-d");
        expectPayload(p -> TestBundles.sub(p, "encoder").put("max_length", 1L),
                "field 'encoder.max_length' is 1, expected 2..8192");
        expectPayload(p -> TestBundles.sub(p, "encoder").put("model", new byte[0]), "field 'encoder.model' is empty");
        expectPayload(p -> TestBundles.sub(p, "encoder").put("check", "x"), "field 'encoder.check' is string, expected map");
        expectPayload(p -> TestBundles.sub(p, "encoder.check").put("text", " \u00a0\u3000"),
                "field 'encoder.check' must hold a non-empty text and a finite unit 3-d embedding");
        expectPayload(p -> TestBundles.sub(p, "encoder.check").put("embedding",
                TestBundles.array("<f4", TestBundles.floats(0.6f, 0.8f), 2)), "finite unit 3-d embedding");
        expectPayload(p -> TestBundles.sub(p, "encoder.check").put("embedding",
                TestBundles.array("<f4", TestBundles.floats(0.6f, 0.8f, 0.5f), 3)), "finite unit 3-d embedding");
        expectPayload(p -> p.remove("exporter"), "missing field 'exporter'");
    }

    @Test
    public void readsAFormat2Bundle() throws Exception {
        Bundle b = BundleReader.read(TestBundles.seal2(TestBundles.payload2()));
        assertTrue(b.usesFormat2());
        assertArrayEquals(new float[] {0.1f, -0.2f, 0f, 0.3f}, b.offsets(), 0);
        Bundle.ClassStats cs = b.classStats();
        assertEquals(2, cs.k());
        assertEquals(3, cs.dim());
        assertArrayEquals(new float[] {0.05f, 0f, -0.05f}, cs.origin(), 0);
        assertArrayEquals(new float[] {8f, 1f, -2f, 6f, 0.5f, -4f}, cs.sums(), 0);
        assertArrayEquals(new float[] {10f, 7f, 0.4f}, cs.counts(), 0);
        assertEquals(9, b.prior().length);
        assertEquals("see runtime/scoring.py", b.scoring().get("rule"));
        assertEquals(2, ((java.util.List<?>) b.privacy().get("releases")).size());
        assertTrue(!BundleReader.read(TestBundles.validBundle()).usesFormat2());
    }

    @Test
    public void acceptsOptionalFormat2FieldsAlone() throws Exception {
        Map<String, Object> p = TestBundles.payload2();
        p.remove("class_stats");
        TestBundles.sub(p, "privacy").remove("releases");  // required only with class statistics
        // Without releases the top-level facts are the whole statement: scale = sensitivity / epsilon.
        TestBundles.sub(p, "privacy").put("noise_scale", TestBundles.TABLES / 8.0);
        p.put("scoring", null);
        Bundle b = BundleReader.read(TestBundles.seal2(p));
        assertNull(b.classStats());
        assertNull(b.scoring());
        assertTrue(b.usesFormat2());
        // A 1.x bundle's format-2 fields are read too, as Python does.
        assertEquals(2, BundleReader.read(TestBundles.seal(TestBundles.payload2())).classStats().k());
    }

    @Test
    public void validatesFormat2FieldsLikePython() {
        expectPayload2(p -> TestBundles.sub(p, "lsh.offsets").put("shape", TestBundles.list(2L, 1L, 2L)),
                "field 'lsh.offsets.shape' must be 2 non-negative integers, got [2, 1, 2]");
        expectPayload2(p -> TestBundles.sub(p, "lsh").put("offsets",
                TestBundles.array("<f4", TestBundles.floats(1, 2, 3, 4), 4, 1)),
                "field 'lsh.offsets' must be finite with shape (2, 2), got (4, 1)");
        expectPayload2(p -> TestBundles.sub(p, "lsh").put("offsets",
                TestBundles.array("<f4", TestBundles.floats(1, Float.POSITIVE_INFINITY, 3, 4), 2, 2)),
                "field 'lsh.offsets' must be finite with shape (2, 2), got (2, 2)");
        expectPayload2(p -> TestBundles.sub(p, "lsh").put("offsets", null), "field 'lsh.offsets' is nil, expected map");
        expectPayload2(p -> TestBundles.sub(p, "class_stats").remove("projection"),
                "missing field 'class_stats.projection'");
        expectPayload2(p -> TestBundles.sub(p, "class_stats").put("sums",
                TestBundles.array("<f4", TestBundles.floats(8f, 1f, -2f, 6f, 0.5f, -4f), 2, 3)),
                "field 'class_stats.sums' must be finite with shape (3, 2), got (2, 3)");
        expectPayload2(p -> TestBundles.sub(p, "class_stats").put("counts",
                TestBundles.array("<f4", TestBundles.floats(10f, Float.NaN, 1f), 3)),
                "field 'class_stats.counts' must be finite with shape (3,), got (3,)");
        expectPayload2(p -> TestBundles.sub(p, "class_stats").put("projection",
                TestBundles.array("<f4", new byte[0], 0L, 3L)),
                "field 'class_stats.projection' must have 1 to 3 rows (the embedding size), got 0");
        expectPayload2(p -> TestBundles.sub(p, "class_stats").put("projection",
                TestBundles.array("<f4", new byte[48], 4L, 3L)),
                "field 'class_stats.projection' must have 1 to 3 rows (the embedding size), got 4");
        expectPayload2(p -> TestBundles.sub(p, "privacy").remove("releases"), "missing field 'privacy.releases'");
        expectPayload2(p -> TestBundles.sub(p, "privacy").put("releases", null),
                "field 'privacy.releases' is nil, expected array");
        expectPayload2(p -> TestBundles.sub(p, "privacy").put("releases", TestBundles.list("votes")),
                "field 'privacy.releases[0]' must be a map, got string");
        expectPayload2(p -> release(p, 1).put("epsilon", -1L),
                "field 'privacy.releases[1].epsilon' must be positive, got -1");
        expectPayload2(p -> release(p, 1).put("epsilon", Double.POSITIVE_INFINITY),
                "field 'privacy.releases[1].epsilon' must be positive, got inf");
        expectPayload2(p -> release(p, 0).put("epsilon", true),
                "field 'privacy.releases[0].epsilon' is boolean, expected float or integer");
        expectPayload2(p -> release(p, 0).remove("sensitivity_l1"),
                "missing field 'privacy.releases[0].sensitivity_l1'");
        expectPayload2(p -> release(p, 0).remove("noise_scale"), "missing field 'privacy.releases[0].noise_scale'");
        expectPayload2(p -> release(p, 1).put("noise_scale", "2.5"),
                "field 'privacy.releases[1].noise_scale' is string, expected float or integer");
        expectPayload2(p -> release(p, 1).put("noise_scale", null),
                "field 'privacy.releases[1].noise_scale' is nil, expected float or integer");
        expectPayload2(p -> release(p, 0).put("noise_scale", true),
                "field 'privacy.releases[0].noise_scale' is boolean, expected float or integer");
        expectPayload2(p -> {  // after sensitivity_l1, before mechanism
            release(p, 0).put("noise_scale", "x");
            release(p, 0).put("sensitivity_l1", 1.5);
        }, "field 'privacy.releases[0].sensitivity_l1' is float, expected integer");
        expectPayload2(p -> {
            release(p, 0).remove("mechanism");
            release(p, 0).put("noise_scale", false);
        }, "field 'privacy.releases[0].noise_scale' is boolean, expected float or integer");
        expectPayload2(p -> release(p, 0).put("statistic", "sums"),
                "field 'privacy.releases' must list every released statistic, got ['sums', 'votes']");
        expectPayload2(p -> release(p, 0).put("epsilon", 7.0),
                "the releases spend epsilon 8.6, but field 'privacy.epsilon' is 8.0: their shares must add up to it");
        expectPayload2(p -> TestBundles.sub(p, "prior").put("embeddings",
                TestBundles.array("<f4", new byte[24], 2L, 3L)),
                "field 'prior.embeddings' must be finite with shape (3, 3), got (2, 3)");
        expectPayload2(p -> p.put("prior", "x"), "field 'prior' is string, expected map");
        expectPayload2(p -> TestBundles.sub(p, "scoring").put("votes", -0.5),
                "field 'scoring' must map names to finite non-negative numbers");
        expectPayload2(p -> TestBundles.sub(p, "scoring").put("votes", -1L), "finite non-negative numbers");
        expectPayload2(p -> TestBundles.sub(p, "scoring").put("prior", false), "finite non-negative numbers");
        expectPayload2(p -> TestBundles.sub(p, "scoring").put("x", TestBundles.list(1L)), "finite non-negative numbers");
        expectPayload2(p -> p.put("scoring", "blend"), "field 'scoring' is string, expected map");
    }

    /** Format 2.1's scoring checks, in Python's order (runtime/bundle.py _check_scoring). */
    @Test
    public void validatesFormat21ScoringLikePython() throws Exception {
        expectPayload2(p -> scoring(p).put("votes", "2"), "field 'scoring.votes' must be a number, got str");
        expectPayload2(p -> scoring(p).put("centroid_clip_l1", "5"),
                "field 'scoring.centroid_clip_l1' must be a number, got str");
        expectPayload2(p -> {  // SCORING_NUMBERS' order, not the map's
            scoring(p).put("centroid_clip_l1", "5");
            scoring(p).remove("prior_temperature");
            scoring(p).put("prior_temperature", "1");
        }, "field 'scoring.prior_temperature' must be a number, got str");
        expectPayload2(p -> {
            scoring(p).put("centroid_rule", "median");
            scoring(p).put("centroids", "1");
        }, "field 'scoring.centroids' must be a number, got str");
        expectPayload2(p -> scoring(p).put("centroid_rule", "median"),
                "field 'scoring.centroid_rule' must be one of cosine, gaussian, cosine_public, got 'median'");
        expectPayload2(p -> scoring(p).put("centroid_rule", "Gaussian's"),
                "field 'scoring.centroid_rule' must be one of cosine, gaussian, cosine_public, got \"Gaussian's\"");
        expectPayload2(p -> scoring(p).put("centroid_rule", 1L),
                "field 'scoring.centroid_rule' must be one of cosine, gaussian, cosine_public, got 1");
        expectPayload2(p -> scoring(p).put("centroid_rule", 2.5),
                "field 'scoring.centroid_rule' must be one of cosine, gaussian, cosine_public, got 2.5");
        expectPayload2(p -> {
            scoring(p).put("centroid_temperature", 0L);
            scoring(p).put("centroid_rule", "median");
        }, "field 'scoring.centroid_rule' must be one of cosine, gaussian, cosine_public, got 'median'");
        expectPayload2(p -> scoring(p).put("centroid_temperature", 0L),
                "field 'scoring.centroid_temperature' must be at least 1e-6");
        expectPayload2(p -> scoring(p).put("prior_temperature", 0.0),
                "field 'scoring.prior_temperature' must be at least 1e-6");
        expectPayload2(p -> scoring(p).put("prior_temperature", -0.0),
                "field 'scoring.prior_temperature' must be at least 1e-6");
        expectPayload2(p -> scoring(p).put("prior_temperature", Double.MIN_VALUE),  // 5e-324
                "field 'scoring.prior_temperature' must be at least 1e-6");
        expectPayload2(p -> scoring(p).put("centroid_temperature", 9.9e-7),
                "field 'scoring.centroid_temperature' must be at least 1e-6");
        expectPayload2(p -> {
            scoring(p).put("prior_temperature", 0L);
            scoring(p).put("centroid_temperature", 0.0);
        }, "field 'scoring.centroid_temperature' must be at least 1e-6");
        // at most 1e6, every number in SCORING_NUMBERS' order, before the temperatures' floor
        expectPayload2(p -> scoring(p).put("votes", 1e308), "field 'scoring.votes' must be at most 1e6");
        expectPayload2(p -> scoring(p).put("prior", 1000001L), "field 'scoring.prior' must be at most 1e6");
        expectPayload2(p -> scoring(p).put("prior_records_per_class", new BigInteger("18446744073709551615")),
                "field 'scoring.prior_records_per_class' must be at most 1e6");
        expectPayload2(p -> scoring(p).put("prior_records_per_class", "1000"),
                "field 'scoring.prior_records_per_class' must be a number, got str");
        expectPayload2(p -> {
            scoring(p).put("prior_records_per_class", 1e7);
            scoring(p).put("centroids", 1.0000000001e6);
        }, "field 'scoring.centroids' must be at most 1e6");
        expectPayload2(p -> {
            scoring(p).put("centroid_temperature", 1e300);
            scoring(p).put("prior_temperature", 0L);
        }, "field 'scoring.centroid_temperature' must be at most 1e6");
        expectPayload2(p -> {
            scoring(p).put("centroid_rule", "median");
            scoring(p).put("votes", 1e308);
        }, "field 'scoring.centroid_rule' must be one of cosine, gaussian, cosine_public, got 'median'");
        String noClip = "field 'scoring.centroid_clip_l1' must be positive for the gaussian centroid rule";
        expectPayload2(p -> scoring(p).put("centroid_rule", "gaussian"), noClip);
        expectPayload2(p -> {
            scoring(p).put("centroid_rule", "gaussian");
            scoring(p).put("centroid_clip_l1", 0L);
        }, noClip);
        expectPayload2(p -> {
            scoring(p).put("centroid_rule", "gaussian");
            scoring(p).put("centroid_clip_l1", -0.0);
        }, noClip);
        expectPayload2(p -> {
            scoring(p).put("centroid_rule", "gaussian");
            scoring(p).put("prior_temperature", 0L);
        }, "field 'scoring.prior_temperature' must be at least 1e-6");
        expectPayload2(p -> {  // the clip's bound comes before the Gaussian rule's clip check
            scoring(p).put("centroid_rule", "gaussian");
            scoring(p).put("centroid_clip_l1", new BigInteger("18446744073709551615"));
        }, "field 'scoring.centroid_clip_l1' must be at most 1e6");

        // What loads: the cosine rule without a clip, the Gaussian rule with one (also an
        // integer at the bound), the bounds themselves, strings and large values under other names.
        Map<String, Object> p = TestBundles.payload2();
        scoring(p).put("centroid_rule", "cosine");
        scoring(p).put("centroid_clip_l1", 0L);
        assertEquals("cosine", BundleReader.read(TestBundles.seal2(p)).scoring().get("centroid_rule"));
        scoring(p).put("centroid_rule", "gaussian");
        scoring(p).put("centroid_clip_l1", 1000000L);
        scoring(p).put("note", "any text");
        scoring(p).put("future_weight", new BigInteger("18446744073709551615"));
        scoring(p).put("votes", 1e6);
        scoring(p).put("prior_records_per_class", 1000000L);
        scoring(p).put("centroid_temperature", 1e-6);
        scoring(p).put("prior_temperature", 1L);
        Scorer.Weights w = new Scorer(BundleReader.read(TestBundles.seal2(p))).weights();
        assertEquals(1e6, w.centroidClipL1, 0);
        assertEquals(1e6, w.priorRecordsPerClass, 0);
        assertEquals(1e-6, w.centroidTemperature, 0);
    }

    private static Map<String, Object> scoring(Map<String, Object> p) {
        return TestBundles.sub(p, "scoring");
    }

    @Test
    public void releasesAreCheckedWithoutClassStatisticsWhenPresent() {
        expectPayload2(p -> {
            p.remove("class_stats");
            release(p, 1).put("epsilon", 2.0);
        }, "the releases spend epsilon 8.4, but field 'privacy.epsilon' is 8.0: their shares must add up to it");
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> release(Map<String, Object> p, int i) {
        return (Map<String, Object>) ((java.util.List<Object>) TestBundles.sub(p, "privacy").get("releases")).get(i);
    }

    private static void expectPayload2(Consumer<Map<String, Object>> edit, String phrase) {
        Map<String, Object> p = TestBundles.payload2();
        edit.accept(p);
        byte[] data = TestBundles.seal2(p);
        expectError(() -> BundleReader.read(data), phrase);
    }

    @Test
    public void readsAFormat3BundleWithoutVoteTables() throws Exception {
        Bundle b = BundleReader.read(TestBundles.seal3(TestBundles.payload3()));
        assertFalse(b.hasVotes());
        assertNull(b.lsh());
        assertNull(b.hyperplanes());
        assertNull(b.votes());
        assertNull(b.offsets());
        assertEquals(0, b.tables());
        assertEquals(0, b.bits());
        assertEquals(3, b.dim());  // the encoder's
        assertEquals(2, b.classStats().k());
        assertEquals(9, b.prior().length);
        assertEquals("cosine_public", b.scoring().get("centroid_rule"));
        assertEquals("linear", b.scoring().get("prior_boost_rule"));
        assertTrue(b.usesClassStatsFormat());
        // the same payload with vote tables: both are read, and the top level is the votes release's
        Bundle t = BundleReader.read(TestBundles.seal3(TestBundles.payload3Tables()));
        assertTrue(t.hasVotes());
        assertEquals(2, t.tables());
        assertEquals(4, t.offsets().length);
        assertTrue(!t.lsh().containsKey("offsets") && !t.lsh().containsKey("hyperplanes"));
        assertFalse(BundleReader.read(TestBundles.validBundle()).usesClassStatsFormat());
        // a newer 3.x minor only adds fields; format 2's single class_stats release is accepted too
        Map<String, Object> p = TestBundles.payload3();
        p.put("future_field", TestBundles.list(1L));
        Map<String, Object> o = TestBundles.outer(TestBundles.pack(p));
        o.put("version", TestBundles.list(3L, 7L));
        assertFalse(BundleReader.read(TestBundles.pack(o)).hasVotes());
        Map<String, Object> merged = TestBundles.payload3();
        TestBundles.sub(merged, "privacy").put("releases", TestBundles.list(TestBundles.release("class_stats", 8.0, 400L)));
        TestBundles.sub(merged, "privacy").put("noise_scale", 50.0);
        assertEquals(2, BundleReader.read(TestBundles.seal3(merged)).classStats().k());
    }

    /** Format 3.0's refusals, with Python's messages and in its order (runtime/bundle/reader.py). */
    @Test
    public void validatesFormat3LikePython() {
        String nothing = "a bundle without vote tables ('votes') must hold 'class_stats': it has nothing to classify with";
        expectPayload3(p -> p.remove("class_stats"), nothing);
        expectPayload3(p -> {  // which comes first: the encoder's dim is read before class_stats
            p.remove("class_stats");
            TestBundles.sub(p, "encoder").remove("dim");
        }, "missing field 'encoder.dim'");
        expectPayload3(p -> TestBundles.sub(p, "encoder").put("dim", "3"), "field 'encoder.dim' is string, expected integer");
        expectPayload3(p -> p.put("encoder", TestBundles.list()), "field 'encoder' is array, expected map");
        expectPayload3(p -> TestBundles.sub(p, "encoder").put("dim", 4L),
                "field 'class_stats.projection' must be finite with shape (2, 4), got (2, 3)");
        expectPayload3(p -> TestBundles.sub(p, "encoder").put("dim", 0L),
                "field 'class_stats.projection' must have 1 to 0 rows (the embedding size), got 2");
        expectPayload3(p -> TestBundles.sub(p, "encoder").put("dim", -5L),
                "field 'class_stats.projection' must have 1 to -5 rows (the embedding size), got 2");
        expectPayload3(p -> TestBundles.sub(p, "encoder").put("dim", new BigInteger("18446744073709551615")),
                "field 'class_stats.projection' must be finite with shape (2, 18446744073709551615), got (2, 3)");
        expectPayload3(p -> {  // the projection's shape is checked before the origin
            TestBundles.sub(p, "class_stats").put("origin", TestBundles.array("<f4", new byte[8], 2L));
            TestBundles.sub(p, "class_stats").put("projection", TestBundles.array("<f4", new byte[24], 3L, 2L));
        }, "field 'class_stats.projection' must be finite with shape (3, 3), got (3, 2)");
        expectPayload3(p -> p.put("class_stats", null), "field 'class_stats' is nil, expected map");
        expectPayload3(p -> p.put("votes", TestBundles.payload().get("votes")), "missing field 'lsh'");
        expectPayload3(p -> p.put("lsh", null), "field 'lsh' is nil, expected map");
        expectPayload3(p -> p.put("lsh", TestBundles.payload().get("lsh")), "missing field 'votes'");
        expectPayload3(p -> release(p, 0).put("statistic", "class_stats_v3"),
                "field 'privacy.releases' must list every released statistic, got ['class_stats_v3', 'class_sums']");
        expectPayload3(p -> TestBundles.sub(p, "privacy").put("releases", TestBundles.list(release(p, 1))),
                "field 'privacy.releases' must list every released statistic, got ['class_sums']");
        expectPayload3(p -> TestBundles.sub(p, "privacy").put("releases", TestBundles.list()),
                "field 'privacy.releases' must list every released statistic, got []");
        expectPayload3(p -> TestBundles.sub(p, "privacy").remove("releases"), "missing field 'privacy.releases'");
        expectPayload3(p -> {
            TestBundles.sub(p, "privacy").put("sensitivity_l1", 1L);
            TestBundles.sub(p, "privacy").put("noise_scale", 2.5);
        }, "fields 'privacy.sensitivity_l1' and 'privacy.noise_scale' (1, 2.5) must be the class_sums release's "
                + "(400, 52.631578947368425)");
        expectPayload3(p -> TestBundles.sub(p, "privacy").put("noise_scale", 50.0),  // the whole epsilon's scale
                "(400, 50.0) must be the class_sums release's");
        expectPayload3(p -> {  // the last release, whichever it is
            Object first = release(p, 0);
            TestBundles.sub(p, "privacy").put("releases", TestBundles.list(release(p, 1), first));
        }, "must be the class_counts release's (1, 2.5)");
        expectPayload3(p -> TestBundles.sub(p, "scoring").put("prior_boost_rule", "quadratic"),
                "field 'scoring.prior_boost_rule' must be one of max, linear, got 'quadratic'");
        expectPayload3(p -> TestBundles.sub(p, "scoring").put("prior_boost_rule", 2L),
                "field 'scoring.prior_boost_rule' must be one of max, linear, got 2");
        expectPayload3(p -> {  // the clip's check comes first
            TestBundles.sub(p, "scoring").put("prior_boost_rule", "quadratic");
            TestBundles.sub(p, "scoring").put("centroid_rule", "gaussian");
        }, "field 'scoring.centroid_clip_l1' must be positive for the gaussian centroid rule");
        expectPayload3(p -> TestBundles.sub(p, "scoring").put("centroid_rule", "Cosine_public"),
                "field 'scoring.centroid_rule' must be one of cosine, gaussian, cosine_public, got 'Cosine_public'");
        // before major 3 the tables are required
        Map<String, Object> p2 = TestBundles.payload3();
        expectError(() -> BundleReader.read(TestBundles.seal2(p2)), "missing field 'lsh'");
        expectError(() -> BundleReader.read(TestBundles.seal(p2)), "missing field 'lsh'");
        // with vote tables: the votes release must be listed, and linear needs class statistics
        expectTables3(p -> TestBundles.sub(p, "privacy").put("releases", TestBundles.list(release(p, 0), release(p, 1))),
                "field 'privacy.releases' must list every released statistic, got ['class_counts', 'class_sums']");
        expectTables3(p -> {
            p.remove("class_stats");
            TestBundles.sub(p, "privacy").put("releases", TestBundles.list(release(p, 2)));
            TestBundles.sub(p, "privacy").put("epsilon", 0.8);
        }, "field 'scoring.prior_boost_rule' is 'linear', which needs the released class counts of 'class_stats'");
        expectTables3(p -> TestBundles.sub(p, "privacy").put("noise_scale", 400 / 6.8),
                "must be the votes release's (2, 2.5)");
    }

    /** Python's order: the records per person are checked before the hashing (format 3 moved them). */
    @Test
    public void checksRecordsPerPersonBeforeTheHashing() {
        expectPayload(p -> {
            TestBundles.sub(p, "privacy").put("max_records_per_unit", 0L);
            TestBundles.sub(p, "lsh").put("family", "minhash");
        }, "field 'privacy.max_records_per_unit' is 0, expected at least 1");
        expectPayload3(p -> TestBundles.sub(p, "privacy").put("max_records_per_unit", 0L),
                "field 'privacy.max_records_per_unit' is 0, expected at least 1");
        expectPayload3(p -> TestBundles.sub(p, "privacy").put("max_records_per_unit", "3"),
                "field 'privacy.max_records_per_unit' is string, expected integer");
    }

    private static void expectPayload3(Consumer<Map<String, Object>> edit, String phrase) {
        Map<String, Object> p = TestBundles.payload3();
        edit.accept(p);
        byte[] data = TestBundles.seal3(p);
        expectError(() -> BundleReader.read(data), phrase);
    }

    private static void expectTables3(Consumer<Map<String, Object>> edit, String phrase) {
        Map<String, Object> p = TestBundles.payload3Tables();
        edit.accept(p);
        byte[] data = TestBundles.seal3(p);
        expectError(() -> BundleReader.read(data), phrase);
    }

    @Test
    public void checksByteCountsBeforeAllocatingWithoutOverflow() {
        // 2^62 x 4 x 3 x 2 bytes overflows a long; 2^64-1 is a msgpack uint64 above Long.MAX_VALUE.
        expectPayload(p -> TestBundles.sub(p, "votes").put("shape",
                TestBundles.list(1L << 62, 4L, 3L)), "bytes, but dtype <i2 and shape [4611686018427387904, 4, 3] need "
                + BigInteger.ONE.shiftLeft(62).multiply(BigInteger.valueOf(24)));
        expectPayload(p -> TestBundles.sub(p, "votes").put("shape",
                TestBundles.list(new BigInteger("18446744073709551615"), 1L, 1L)), "bytes, but dtype <i2");
        expectPayload(p -> TestBundles.sub(p, "votes").put("shape", TestBundles.list(1L << 40, 1L << 10, 7L)),
                "bytes, but dtype");
        expectPayload(p -> {
            TestBundles.sub(p, "votes").put("shape", TestBundles.list(1L << 62, 0L, 3L));
            TestBundles.sub(p, "votes").put("data", new byte[0]);
        }, "field 'votes' has shape (4611686018427387904, 0, 3), expected (2, 4, 3)");
    }

    // ------------------------------------------------------------------ helpers

    private interface Read {
        Object run() throws Exception;
    }

    private static void expectError(Read read, String phrase) {
        try {
            read.run();
        } catch (BundleException e) {
            assertTrue("message '" + e.getMessage() + "' lacks '" + phrase + "'", e.getMessage().contains(phrase));
            return;
        } catch (Exception e) {
            throw new AssertionError("expected a BundleException, got " + e, e);
        }
        fail("accepted; expected an error containing '" + phrase + "'");
    }

    private static void expectPayload(Consumer<Map<String, Object>> edit, String phrase) {
        Map<String, Object> p = TestBundles.payload();
        edit.accept(p);
        byte[] data = TestBundles.seal(p);
        expectError(() -> BundleReader.read(data), phrase);
    }

    private static void expectOuter(Consumer<Map<String, Object>> edit, String phrase) {
        Map<String, Object> o = TestBundles.outer(TestBundles.pack(TestBundles.payload()));
        edit.accept(o);
        byte[] data = TestBundles.pack(o);
        expectError(() -> BundleReader.read(data), phrase);
    }
}
