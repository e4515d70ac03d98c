package org.dpedge.core;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.io.File;
import java.nio.file.Files;
import java.util.List;
import java.util.Map;

import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

/**
 * The reader on small synthetic bundles (TestBundles): what it decodes, and the refusals whose
 * logic is Java's own (the golden data's generated cases hold every phrase to Python's).
 */
public class BundleReaderTest {
    @Rule
    public TemporaryFolder tmp = new TemporaryFolder();

    @Test
    public void decodesEveryField() throws Exception {
        Bundle b = TestBundles.read(TestBundles.document());
        assertEquals(List.of("alarm", "music", "weather"), b.labels());
        assertEquals("play music", b.labelDescriptions().get(1));
        assertEquals(8.0, b.epsilon(), 0);
        assertEquals(1, b.recordsPerUnit());
        assertArrayEquals(new int[] {1, 0}, b.version());
        assertEquals(List.of("class_counts", "class_sums", "votes"), List.copyOf(b.releases().keySet()));
        PrivacyFacts sums = b.releases().get("class_sums");
        assertEquals(200, sums.sensitivityL1());
        assertEquals(100, sums.grid());
        assertEquals(2.0, sums.clipL1(), 0);
        assertArrayEquals(new int[] {5, 3, 2}, b.classCounts());
        assertArrayEquals(new int[] {100, 0, 0, 100, -100, -100}, b.classSums());
        assertEquals(2, b.k());
        assertEquals(3, b.dim());
        assertEquals(2, b.tables());
        assertEquals(2, b.bits());
        assertEquals(0.1f, b.offsets()[1], 0);
        assertEquals(-3, b.votes()[0]);
        assertEquals(0.04, b.scoring().centroidTemperature, 0);
        assertEquals("dpedge", b.exporter().get("name"));
        Bundle.Encoder e = b.encoder();
        assertEquals("onnx", e.format());
        assertEquals(16, e.maxLength());
        assertEquals("wake me up", e.checkText());
        assertEquals(0, e.weights().remaining());
        assertTrue(e.externalData().isEmpty());
    }

    @Test
    public void readsAFileAndNamesItInErrors() throws Exception {
        File f = tmp.newFile("b.dpedge");
        Files.write(f.toPath(), TestBundles.seal(TestBundles.document()));
        assertEquals(3, BundleReader.read(f).labels().size());
        byte[] data = Files.readAllBytes(f.toPath());
        data[data.length / 2] ^= 1;
        Files.write(f.toPath(), data);
        assertEquals(f + ": " + BundleReader.CORRUPTED, message(f));
        assertEquals(tmp.getRoot() + ": is a directory, not a bundle file", message(tmp.getRoot()));
        File none = new File(tmp.getRoot(), "none.dpedge");
        assertEquals(none + ": no such bundle file", message(none));
    }

    /** A newer minor's unknown keys are ignored, 1.0's refused; releases stay closed in every version. */
    @Test
    public void unknownKeysDependOnTheMinorVersion() throws Exception {
        Map<String, Object> doc = TestBundles.document();
        TestBundles.put(doc, "privacy.future", 1L);
        assertEquals("unknown field 'privacy.future' in a version 1.0 bundle", TestBundles.refusal(doc));
        doc.put("version", TestBundles.list(1L, 3L));
        assertEquals(3, TestBundles.read(doc).version()[1]);
        TestBundles.put(doc, "releases.means", TestBundles.map());
        assertEquals("field 'releases.means' is a release this reader cannot account for", TestBundles.refusal(doc));
    }

    @Test
    public void optionalPartsMayBeAbsent() throws Exception {
        Map<String, Object> doc = TestBundles.document();
        for (String path : new String[] {"label_descriptions", "prior", "exporter", "hashing.offsets", "hashing.seed"}) {
            TestBundles.drop(doc, path);
        }
        Bundle b = TestBundles.read(doc);
        assertNull(b.labelDescriptions());
        assertNull(b.prior());
        assertNull(b.offsets());
        assertTrue(b.exporter().isEmpty());
    }

    @Test
    public void readsVoteTablesAloneAndClassStatisticsAlone() throws Exception {
        Map<String, Object> votes = TestBundles.document();
        for (String path : new String[] {"releases.class_counts", "releases.class_sums", "subspace", "prior", "scoring"}) {
            TestBundles.drop(votes, path);
        }
        TestBundles.put(votes, "privacy.epsilon", 1.0);
        Bundle v = TestBundles.read(votes);
        assertFalse(v.hasClassStatistics());
        assertTrue(v.hasVotes());
        Map<String, Object> sums = TestBundles.document();
        TestBundles.drop(sums, "releases.votes");
        TestBundles.drop(sums, "hashing");
        TestBundles.put(sums, "privacy.epsilon", 7.0);
        Bundle s = TestBundles.read(sums);
        assertFalse(s.hasVotes());
        assertEquals(0, s.tables());
    }

    @Test
    public void theWeightsAreAViewOfTheFileWithTheirExternalData() throws Exception {
        // The tiny model with one uint8 initializer [8] whose data is bytes 4..12 of encoder.weights.
        Map<String, Object> doc = TestBundles.document();
        byte[] weights = new byte[16];
        for (int i = 0; i < weights.length; i++) {
            weights[i] = (byte) i;
        }
        TestBundles.put(doc, "encoder.model", TestBundles.tinyOnnx(TestBundles.externalTensor("w", 4, 8)));
        TestBundles.put(doc, "encoder.weights", weights);
        Bundle.Encoder e = TestBundles.read(doc).encoder();
        ModelFamily.ExternalData w = e.externalData().get(0);
        assertEquals("w", w.name);
        assertEquals(2, w.dataType);
        assertArrayEquals(new long[] {8}, w.dims);
        assertEquals(4, w.offset);
        assertEquals(8, w.length);
        assertEquals(5, e.weights().get(5));
        assertTrue(e.weights().isReadOnly());
        TestBundles.put(doc, "encoder.weights", new byte[11]);
        assertTrue(TestBundles.refusal(doc).endsWith("ends at byte 12, past the 11 bytes of encoder.weights"));
    }

    @Test
    public void aTextPrefixAndUnicodeLabelsAreRead() throws Exception {
        Map<String, Object> doc = TestBundles.document();
        TestBundles.put(doc, "encoder.text_prefix", "query: ");
        doc.put("labels", TestBundles.list("alarm\u200ctimer", "música", "天気"));
        Bundle b = TestBundles.read(TestBundles.encoderLast(doc));
        assertEquals("query: ", b.encoder().textPrefix());
        assertEquals("天気", b.labels().get(2));
    }

    /** Python's round is half to even: grid 2 x clip 1.25 is one step of 2, not 3. */
    @Test
    public void theSumsSensitivityRoundsHalfToEven() throws Exception {
        Map<String, Object> doc = TestBundles.document();
        TestBundles.put(doc, "releases.class_sums.grid", 2L);
        TestBundles.put(doc, "releases.class_sums.clip_l1", 1.25);
        TestBundles.put(doc, "releases.class_sums.sensitivity_l1", 2L);
        TestBundles.put(doc, "releases.class_sums.noise_scale", 2 / 6.0);
        TestBundles.read(doc);
        TestBundles.put(doc, "releases.class_sums.sensitivity_l1", 3L);
        TestBundles.put(doc, "releases.class_sums.noise_scale", 3 / 6.0);
        assertTrue(TestBundles.refusal(doc).contains("has 1 x 2: the privacy facts contradict each other"));
    }

    @Test
    public void aPreReleaseFileIsRefusedInOneLine() {
        byte[] old = TestBundles.pack(TestBundles.map("format", "dpedge-bundle", "version", TestBundles.list(4L, 0L),
                "checksum", TestBundles.map("algorithm", "sha256"), "payload", new byte[3]));
        String m = message(old);
        assertTrue(m, m.startsWith("this bundle uses the pre-release format 4.0, which dpedge 1.x does not read"));
        assertEquals("not a dpedge bundle (it does not start with a msgpack map)", message(new byte[0]));
        byte[] sealed = TestBundles.seal(TestBundles.document());
        assertEquals("the bundle is truncated or corrupted: it does not end with its 'sha256' entry",
                message(java.util.Arrays.copyOf(sealed, sealed.length - 1)));
    }

    @Test
    public void onlyMajorOneIsRead() {
        Map<String, Object> doc = TestBundles.document();
        doc.put("version", TestBundles.list(2L, 0L));
        assertEquals("bundle format version 2.0 is not 1.x, the only format dpedge reads", TestBundles.refusal(doc));
        doc.put("version", TestBundles.list(1L, 0.0));
        assertEquals("field 'version' must be [major, minor], got [1, 0.0]", TestBundles.refusal(doc));
    }

    /** Integers and floats are typed by their msgpack type, whatever their value. */
    @Test
    public void integersAndFloatsAreStrictlyTyped() throws Exception {
        Map<String, Object> doc = TestBundles.document();
        TestBundles.put(doc, "privacy.epsilon", 8L);
        assertEquals("field 'privacy.epsilon' is integer, expected float", TestBundles.refusal(doc));
        TestBundles.put(doc, "privacy.epsilon", 8.0f);  // float32 is a float
        assertEquals(8.0, TestBundles.read(doc).epsilon(), 0);
        TestBundles.put(doc, "encoder.max_length", 16.0);
        assertEquals("field 'encoder.max_length' is float, expected integer", TestBundles.refusal(doc));
    }

    // ------------------------------------------------------------------ helpers

    private static String message(Object fileOrBytes) {
        try {
            if (fileOrBytes instanceof File) {
                BundleReader.read((File) fileOrBytes);
            } else {
                BundleReader.read((byte[]) fileOrBytes);
            }
        } catch (BundleException e) {
            return e.getMessage();
        }
        fail("accepted");
        return null;
    }
}
