package org.dpedge.core;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.io.File;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.junit.AfterClass;
import org.junit.Assume;
import org.junit.BeforeClass;
import org.junit.Test;

/**
 * Conformance with the Python runtime, on golden data written by {@code android_demo/golden.py}.
 *
 * <p>Why: the Java core is a port, and only the Python runtime's own answers can show that a
 * phone tokenizes, hashes, scores and refuses bundles exactly as a laptop does. The golden
 * folder is given by the system property {@code dpedge.golden} (run-tests.sh passes it); the
 * tests are skipped when it is not set, and fail when it is set but unreadable.
 *
 * <p>For every case: the token ids must be equal; the buckets computed from the golden
 * embedding must be equal (a bundle without vote tables, format 3's default, has none: Python
 * records none and the Java classifier does not hash); the scores must agree within 1e-9
 * relative (integer sums for a bundle of vote tables alone, the blend of centroids, prior and,
 * when there are tables, votes otherwise) and the label must be equal, both from the golden
 * embedding and through the full {@link Classifier#predict} with a {@link TextEncoder} stub
 * that returns the golden embedding for the golden token ids (the native encoder cannot run on
 * the JVM here). The "scored" bundles (derived from a real default bundle and a real bundle
 * with vote tables, each exercising one part of the scorer, among them bundles rewritten as
 * formats 2.1 and 2.0 wrote them) must give the same prior boost, and the same buckets, scores
 * and label for each golden embedding. Every malformed bundle must be refused with a
 * {@link BundleException} containing the given phrase, and every valid variant must load.
 */
public class GoldenConformanceTest {
    private static final int MAX_REPORTED = 20;
    /** Scores must agree within this, relative to max(1, |python score|). */
    private static final double TOLERANCE = 1e-9;

    private static File dir;
    private static final List<GoldenBundle> bundles = new ArrayList<>();
    private static List<?> malformed;
    private static List<?> variants;
    private static List<?> scored;

    private static int tokenCases;
    private static int bucketCases;
    private static int labelCases;
    private static int malformedRejected;
    private static int variantsLoaded;
    private static int scoredCases;
    private static int classStatsBundles;
    private static int bundlesWithoutVotes;
    private static double maxScoreDifference;

    /** One bundle of the golden set with its cases. */
    private static final class GoldenBundle {
        final String file;
        final Bundle bundle;
        final List<Map<?, ?>> cases = new ArrayList<>();

        GoldenBundle(String file, Bundle bundle) {
            this.file = file;
            this.bundle = bundle;
        }
    }

    @BeforeClass
    public static void load() throws Exception {
        String prop = System.getProperty("dpedge.golden");
        Assume.assumeTrue("golden data not given (-Ddpedge.golden=DIR)", prop != null && !prop.isEmpty());
        dir = new File(prop);
        File index = new File(dir, "golden.msgpack");
        assertTrue("no golden data at " + index + " (run android_demo/golden.py --out " + dir + ")", index.isFile());
        byte[] data = Files.readAllBytes(index.toPath());
        Map<String, Object> golden = Msgpack.parseMap(data, 0, data.length, "golden.msgpack");
        for (Object b : (List<?>) golden.get("bundles")) {
            Map<?, ?> entry = (Map<?, ?>) b;
            String file = (String) entry.get("file");
            GoldenBundle gb = new GoldenBundle(file, BundleReader.read(new File(dir, file)));
            if (gb.bundle.classStats() != null) {
                classStatsBundles++;
            }
            if (!gb.bundle.hasVotes()) {
                bundlesWithoutVotes++;
            }
            for (Object c : (List<?>) entry.get("cases")) {
                gb.cases.add((Map<?, ?>) c);
            }
            bundles.add(gb);
        }
        malformed = (List<?>) golden.get("malformed");
        variants = golden.containsKey("variants") ? (List<?>) golden.get("variants") : new ArrayList<>();
        scored = golden.containsKey("scored") ? (List<?>) golden.get("scored") : new ArrayList<>();
        assertTrue("golden data has no bundles", !bundles.isEmpty());
        assertNotNull("golden data has no malformed list", malformed);
    }

    @AfterClass
    public static void summary() {
        if (dir != null) {
            System.out.println("golden: " + tokenCases + " token cases, " + bucketCases + " bucket cases, "
                    + labelCases + " label cases passed; " + malformedRejected + " malformed bundles rejected; "
                    + variantsLoaded + " valid variants loaded; " + scoredCases + " scored cases passed; "
                    + classStatsBundles + " of " + bundles.size() + " bundles have class statistics, "
                    + bundlesWithoutVotes + " no vote tables; largest score difference " + maxScoreDifference);
        }
    }

    @Test
    public void tokenIdsMatchPython() throws Exception {
        List<String> failures = new ArrayList<>();
        for (GoldenBundle gb : bundles) {
            WordPieceTokenizer tok = new WordPieceTokenizer(gb.bundle.encoder().tokenizerJson(),
                    gb.bundle.encoder().maxLength());
            for (Map<?, ?> c : gb.cases) {
                int[] expected = ints((List<?>) c.get("token_ids"));
                int[] actual = tok.encode((String) c.get("text"));
                if (Arrays.equals(expected, actual)) {
                    tokenCases++;
                } else {
                    failures.add(gb.file + " " + describe(c) + ": python " + Arrays.toString(expected) + ", java "
                            + Arrays.toString(actual));
                }
            }
        }
        report("token ids differ", failures);
    }

    @Test
    public void bucketsMatchPython() {
        List<String> failures = new ArrayList<>();
        for (GoldenBundle gb : bundles) {
            SimHasher hasher = gb.bundle.hasVotes() ? new SimHasher(gb.bundle) : null;
            for (Map<?, ?> c : gb.cases) {
                int[] expected = ints((List<?>) c.get("buckets"));
                if (hasher == null) {  // nothing to hash: Python has no buckets either
                    if (expected.length != 0) {
                        failures.add(gb.file + " " + describe(c) + ": python has buckets, java has no vote tables");
                    }
                    continue;
                }
                int[] actual = hasher.buckets(embedding(c));
                if (Arrays.equals(expected, actual)) {
                    bucketCases++;
                } else {
                    failures.add(gb.file + " " + describe(c) + ": python " + Arrays.toString(expected) + ", java "
                            + Arrays.toString(actual));
                }
            }
        }
        report("buckets differ", failures);
    }

    @Test
    public void scoresAndLabelsMatchPython() throws Exception {
        List<String> failures = new ArrayList<>();
        for (GoldenBundle gb : bundles) {
            Map<List<Integer>, float[]> lookup = new HashMap<>();
            for (Map<?, ?> c : gb.cases) {
                lookup.put(boxed(ints((List<?>) c.get("token_ids"))), embedding(c));
            }
            Classifier clf = new Classifier(gb.bundle, stub(lookup));
            for (Map<?, ?> c : gb.cases) {
                String label = (String) c.get("label");
                List<?> scores = (List<?>) c.get("scores");
                Prediction fromEmbedding = clf.predictEmbedding(embedding(c));
                String problem = compareScores(gb.bundle.labels(), scores, fromEmbedding);
                if (problem == null && !label.equals(fromEmbedding.label())) {
                    problem = "label from embedding " + fromEmbedding.label() + ", python " + label;
                }
                if (problem == null) {
                    Prediction full = clf.predict((String) c.get("text"));
                    if (!label.equals(full.label())) {
                        problem = "predict(text) label " + full.label() + ", python " + label;
                    }
                }
                if (problem == null) {
                    labelCases++;
                } else {
                    failures.add(gb.file + " " + describe(c) + ": " + problem);
                }
            }
        }
        report("scores or labels differ", failures);
    }

    @Test
    public void checkTextPassesWithTheExportersEmbedding() throws Exception {
        for (GoldenBundle gb : bundles) {
            Bundle.Encoder enc = gb.bundle.encoder();
            if (enc.checkText() == null) {
                continue;
            }
            Classifier clf = new Classifier(gb.bundle, ids -> enc.checkEmbedding());
            Double cos = clf.verify();
            assertNotNull(cos);
            assertEquals(gb.file + " check cosine", 1.0, cos, 1e-6);
        }
    }

    @Test
    public void malformedBundlesAreRejected() throws Exception {
        List<String> failures = new ArrayList<>();
        for (Object o : malformed) {
            Map<?, ?> m = (Map<?, ?>) o;
            File file = new File(dir, (String) m.get("file"));
            String phrase = (String) m.get("message");
            String fromFile = rejection(() -> BundleReader.read(file));
            String fromBytes = rejection(() -> BundleReader.read(Files.readAllBytes(file.toPath())));
            if (fromFile == null || fromBytes == null) {
                failures.add(m.get("file") + ": accepted, expected an error containing '" + phrase + "'");
            } else if (!fromFile.contains(phrase) || !fromBytes.contains(phrase)) {
                failures.add(m.get("file") + ": message '" + fromFile + "' lacks '" + phrase + "'");
            } else {
                malformedRejected++;
            }
        }
        report("malformed bundles not rejected as expected", failures);
    }

    /**
     * Bundles derived from a real default bundle and a real one with vote tables (other weights
     * and temperatures, small epsilon, records per person, no prior, no class statistics, offsets
     * alone, counts below the floor, a zero class sum, stripped to 1.2, every centroid rule:
     * format 3.0's "cosine_public", format 2.1's Gaussian rule, also with a small clip, and
     * format 2.0's cosine rule, in bundles rewritten as formats 2.1 and 2.0 wrote them; both
     * prior boost rules, 3.0's linear one up to its cap and 2.x's with and without its count
     * term): the prior's boost, and the buckets, scores and label of each golden embedding, must
     * be Python's.
     */
    @Test
    public void scoredBundlesMatchPython() throws Exception {
        List<String> failures = new ArrayList<>();
        for (Object o : scored) {
            Map<?, ?> m = (Map<?, ?>) o;
            String file = (String) m.get("file");
            Bundle bundle = BundleReader.read(new File(dir, file));
            SimHasher hasher = bundle.hasVotes() ? new SimHasher(bundle) : null;
            Classifier clf = new Classifier(bundle, ids -> {
                throw new AssertionError("the scored cases give embeddings, not texts");
            });
            boolean plain = (Boolean) m.get("plain_votes");
            if (clf.scorer().plainVotes() != plain) {
                failures.add(file + ": plain votes " + clf.scorer().plainVotes() + ", python " + plain);
                continue;
            }
            if (m.containsKey("prior_boost")) {  // golden data from before the count term has none
                double expected = (Double) m.get("prior_boost");
                double actual = clf.scorer().priorBoost();
                if (!(Math.abs(actual - expected) <= TOLERANCE * Math.max(1.0, Math.abs(expected)))) {
                    failures.add(file + ": prior boost " + actual + ", python " + expected);
                    continue;
                }
            }
            int i = 0;
            for (Object c : (List<?>) m.get("cases")) {
                Map<?, ?> cm = (Map<?, ?>) c;
                float[] emb = embedding(cm);
                int[] expected = ints((List<?>) cm.get("buckets"));
                int[] actual = hasher == null ? new int[0] : hasher.buckets(emb);
                String problem = null;
                if (!Arrays.equals(expected, actual)) {
                    problem = "buckets: python " + Arrays.toString(expected) + ", java " + Arrays.toString(actual);
                }
                Prediction p = clf.predictEmbedding(emb);
                if (problem == null) {
                    problem = compareScores(bundle.labels(), (List<?>) cm.get("scores"), p);
                }
                if (problem == null && !cm.get("label").equals(p.label())) {
                    problem = "label " + p.label() + ", python " + cm.get("label");
                }
                if (problem == null) {
                    scoredCases++;
                } else {
                    failures.add(file + " embedding " + i + ": " + problem);
                }
                i++;
            }
        }
        report("scored cases differ", failures);
    }

    /** Valid bundles in other shapes the format allows (per-person privacy, format 1.0, 2.x, 3.x): they must load. */
    @Test
    public void validVariantsLoad() throws Exception {
        List<String> failures = new ArrayList<>();
        for (Object o : variants) {
            Map<?, ?> m = (Map<?, ?>) o;
            File file = new File(dir, (String) m.get("file"));
            String error = rejection(() -> BundleReader.read(file));
            if (error != null) {
                failures.add(m.get("file") + ": rejected: " + error);
            } else {
                variantsLoaded++;
            }
        }
        report("valid variants rejected", failures);
    }

    // ------------------------------------------------------------------ helpers

    private interface Read {
        Bundle run() throws Exception;
    }

    /** The BundleException message, or null if the bundle was accepted; anything else fails. */
    private static String rejection(Read read) throws Exception {
        try {
            read.run();
            return null;
        } catch (BundleException e) {
            return e.getMessage();
        }
    }

    private static TextEncoder stub(Map<List<Integer>, float[]> lookup) {
        return ids -> {
            float[] emb = lookup.get(boxed(ids));
            if (emb == null) {
                throw new AssertionError("no golden embedding for token ids " + Arrays.toString(ids));
            }
            return emb.clone();
        };
    }

    private static String compareScores(List<String> labels, List<?> expected, Prediction p) {
        LinkedHashMap<String, Double> actual = p.scores();
        if (expected.size() != actual.size()) {
            return "python has " + expected.size() + " scores, java " + actual.size();
        }
        for (int i = 0; i < expected.size(); i++) {
            double e = ((Number) expected.get(i)).doubleValue();
            double a = actual.get(labels.get(i));
            double diff = Math.abs(e - a) / Math.max(1.0, Math.abs(e));
            synchronized (GoldenConformanceTest.class) {
                maxScoreDifference = Math.max(maxScoreDifference, diff);
            }
            if (!(diff <= TOLERANCE)) {
                return "score of " + labels.get(i) + ": python " + e + ", java " + a;
            }
        }
        return null;
    }

    private static float[] embedding(Map<?, ?> c) {
        Msgpack.Bin bin = (Msgpack.Bin) c.get("embedding");
        float[] out = new float[bin.length / 4];
        ByteBuffer.wrap(bin.array, bin.offset, bin.length).slice().order(ByteOrder.LITTLE_ENDIAN)
                .asFloatBuffer().get(out);
        return out;
    }

    private static int[] ints(List<?> list) {
        int[] out = new int[list.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = (int) (long) (Long) list.get(i);
        }
        return out;
    }

    private static List<Integer> boxed(int[] ids) {
        List<Integer> out = new ArrayList<>(ids.length);
        for (int id : ids) {
            out.add(id);
        }
        return out;
    }

    private static String describe(Map<?, ?> c) {
        String text = (String) c.get("text");
        return "text " + Msgpack.repr(text.length() > 60 ? text.substring(0, 60) + "..." : text);
    }

    private static void report(String what, List<String> failures) {
        if (!failures.isEmpty()) {
            StringBuilder sb = new StringBuilder(failures.size() + " " + what + ":");
            for (String f : failures.subList(0, Math.min(MAX_REPORTED, failures.size()))) {
                sb.append("\n  ").append(f);
            }
            fail(sb.toString());
        }
    }
}
