package org.dpedge.core;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.io.File;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.junit.AfterClass;
import org.junit.Assume;
import org.junit.BeforeClass;
import org.junit.Test;

/**
 * Conformance with the Python runtime, on golden data written by {@code android_demo/golden.py}
 * (folder given by the system property {@code dpedge.golden}; skipped when it is not set).
 *
 * <p>Why: the Java core is a port, and only the Python runtime's own answers can show that a
 * phone reads, tokenizes, hashes, scores and refuses bundles exactly as a laptop does. For each
 * real bundle and text: the token ids and buckets must be equal, the scores agree within 1e-9
 * relative and the label be equal, from the golden embedding and through
 * {@link Classifier#predict} with a {@link TextEncoder} that returns the golden embedding for
 * the golden token ids (the native encoders cannot run on the JVM here). The derived "scored"
 * bundles (each another branch of the scoring rule) must give Python's prior boost, buckets,
 * scores and label. Every malformed bundle (generated from the format's table) must be refused
 * with each of its phrases, every variant must load, and the format's table and the text
 * tables must be Python's.
 */
public class GoldenConformanceTest {
    private static final int MAX_REPORTED = 20;
    /** Scores must agree within this, relative to max(1, |python score|). */
    private static final double TOLERANCE = 1e-9;

    private static File dir;
    private static Map<String, Object> golden;
    private static final Map<String, Bundle> bundles = new HashMap<>();

    private static int tokenCases;
    private static int bucketCases;
    private static int labelCases;
    private static int malformedRefused;
    private static int variantsLoaded;
    private static int scoredCases;
    private static int classStatisticsBundles;
    private static int bundlesWithoutVotes;
    private static double largestDifference;

    @BeforeClass
    @SuppressWarnings("unchecked")
    public static void load() throws Exception {
        String prop = System.getProperty("dpedge.golden");
        Assume.assumeTrue("golden data not given (-Ddpedge.golden=DIR)", prop != null && !prop.isEmpty());
        dir = new File(prop);
        File index = new File(dir, "golden.msgpack");
        assertTrue("no golden data at " + index + " (run android_demo/golden.py --out " + dir + ")", index.isFile());
        golden = (Map<String, Object>) TestBundles.unpack(Files.readAllBytes(index.toPath()));
        for (Map<String, Object> entry : maps(golden.get("bundles"))) {
            Bundle b = BundleReader.read(new File(dir, (String) entry.get("file")));
            bundles.put((String) entry.get("file"), b);
            classStatisticsBundles += b.hasClassStatistics() ? 1 : 0;
            bundlesWithoutVotes += b.hasVotes() ? 0 : 1;
        }
    }

    @AfterClass
    public static void summary() {
        if (dir != null) {
            System.out.println("golden: " + tokenCases + " token cases, " + bucketCases + " bucket cases, " + labelCases
                    + " label cases passed; " + malformedRefused + " malformed bundles refused; " + variantsLoaded
                    + " valid variants loaded; " + scoredCases + " scored cases passed; " + classStatisticsBundles
                    + " of " + bundles.size() + " bundles have class statistics, " + bundlesWithoutVotes
                    + " no vote tables; largest score difference " + largestDifference);
        }
    }

    @Test
    public void tokenIdsMatchPython() throws Exception {
        List<String> failures = new ArrayList<>();
        for (Map<String, Object> entry : maps(golden.get("bundles"))) {
            Classifier clf = new Classifier(bundles.get(entry.get("file")), ids -> null);
            for (Map<String, Object> c : maps(entry.get("cases"))) {
                int[] expected = ints(c.get("token_ids"));
                int[] actual = clf.tokens((String) c.get("text"));
                if (Arrays.equals(expected, actual)) {
                    tokenCases++;
                } else {
                    failures.add(entry.get("file") + " " + describe(c) + ": python " + Arrays.toString(expected)
                            + ", java " + Arrays.toString(actual));
                }
            }
        }
        report("token ids differ", failures);
    }

    @Test
    public void bucketsMatchPython() throws Exception {
        List<String> failures = new ArrayList<>();
        for (Map<String, Object> entry : maps(golden.get("bundles"))) {
            SimHasher hasher = new Scorer(bundles.get(entry.get("file"))).hasher();
            for (Map<String, Object> c : maps(entry.get("cases"))) {
                int[] expected = ints(c.get("buckets"));
                int[] actual = hasher == null ? new int[0] : hasher.buckets(embedding(c));
                if (!Arrays.equals(expected, actual)) {
                    failures.add(entry.get("file") + " " + describe(c) + ": python " + Arrays.toString(expected)
                            + ", java " + Arrays.toString(actual));
                } else if (hasher != null) {
                    bucketCases++;
                }
            }
        }
        report("buckets differ", failures);
    }

    @Test
    public void scoresAndLabelsMatchPython() throws Exception {
        List<String> failures = new ArrayList<>();
        for (Map<String, Object> entry : maps(golden.get("bundles"))) {
            Map<List<Integer>, float[]> lookup = new HashMap<>();
            for (Map<String, Object> c : maps(entry.get("cases"))) {
                lookup.put(boxed(ints(c.get("token_ids"))), embedding(c));
            }
            Bundle bundle = bundles.get(entry.get("file"));
            Classifier clf = new Classifier(bundle, ids -> {
                float[] emb = lookup.get(boxed(ids));
                if (emb == null) {
                    throw new AssertionError("no golden embedding for token ids " + Arrays.toString(ids));
                }
                return emb.clone();
            });
            for (Map<String, Object> c : maps(entry.get("cases"))) {
                String label = (String) c.get("label");
                Prediction p = clf.predictEmbedding(embedding(c));
                String problem = compare(bundle.labels(), c, p);
                if (problem == null && !label.equals(clf.predict((String) c.get("text")).label())) {
                    problem = "predict(text) gives another label than python's " + label;
                }
                if (problem == null) {
                    labelCases++;
                } else {
                    failures.add(entry.get("file") + " " + describe(c) + ": " + problem);
                }
            }
        }
        report("scores or labels differ", failures);
    }

    /** The check passes with the exporter's own embedding (the stand-in engine returns it). */
    @Test
    public void checkTextPassesWithTheExportersEmbedding() throws Exception {
        for (Map.Entry<String, Bundle> e : bundles.entrySet()) {
            Classifier clf = new Classifier(e.getValue(), ids -> e.getValue().encoder().checkEmbedding());
            assertEquals(e.getKey() + " check cosine", 1.0, clf.verify(), 1e-6);
        }
    }

    @Test
    public void scoredBundlesMatchPython() throws Exception {
        List<String> failures = new ArrayList<>();
        for (Map<String, Object> m : maps(golden.get("scored"))) {
            String file = (String) m.get("file");
            Bundle bundle = BundleReader.read(new File(dir, file));
            Classifier clf = new Classifier(bundle, ids -> {
                throw new AssertionError("the scored cases give embeddings, not texts");
            });
            Scorer scorer = clf.scorer();
            if (scorer.plainVotes() != (Boolean) m.get("plain_votes")) {
                failures.add(file + ": plain votes " + scorer.plainVotes() + ", python " + m.get("plain_votes"));
                continue;
            }
            double boost = (Double) m.get("prior_boost");
            if (!(Math.abs(scorer.priorBoost() - boost) <= TOLERANCE * Math.max(1.0, Math.abs(boost)))) {
                failures.add(file + ": prior boost " + scorer.priorBoost() + ", python " + boost);
                continue;
            }
            int i = 0;
            for (Map<String, Object> c : maps(m.get("cases"))) {
                float[] emb = embedding(c);
                int[] expected = ints(c.get("buckets"));
                int[] actual = scorer.hasher() == null ? new int[0] : scorer.hasher().buckets(emb);
                String problem = Arrays.equals(expected, actual) ? compare(bundle.labels(), c, clf.predictEmbedding(emb))
                        : "buckets: python " + Arrays.toString(expected) + ", java " + Arrays.toString(actual);
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

    @Test
    public void malformedBundlesAreRefusedWithPythonsPhrases() throws Exception {
        List<String> failures = new ArrayList<>();
        for (Map<String, Object> m : maps(golden.get("malformed"))) {
            File file = new File(dir, (String) m.get("file"));
            String fromBytes = refusal(Files.readAllBytes(file.toPath()));
            List<String> missing = new ArrayList<>();
            for (Object phrase : (List<?>) m.get("phrases")) {
                if (fromBytes == null || !fromBytes.contains((String) phrase)) {
                    missing.add((String) phrase);
                }
            }
            if (fromBytes == null) {
                failures.add(m.get("file") + ": accepted, expected " + missing);
            } else if (!missing.isEmpty()) {
                failures.add(m.get("file") + ": '" + fromBytes + "' lacks " + missing);
            } else {
                malformedRefused++;
            }
        }
        report("malformed bundles not refused as Python refuses them", failures);
    }

    /** A file's refusal names its path before the reason. */
    @Test
    public void refusingAFileNamesIt() throws Exception {
        Map<String, Object> first = maps(golden.get("malformed")).get(0);
        File file = new File(dir, (String) first.get("file"));
        try {
            BundleReader.read(file);
            fail("accepted " + file);
        } catch (BundleException e) {
            assertTrue(e.getMessage(), e.getMessage().startsWith(file + ": "));
        }
    }

    @Test
    public void validVariantsLoad() throws Exception {
        List<String> failures = new ArrayList<>();
        for (Map<String, Object> m : maps(golden.get("variants"))) {
            String error = refusal(Files.readAllBytes(new File(dir, (String) m.get("file")).toPath()));
            if (error != null) {
                failures.add(m.get("file") + ": refused: " + error);
            } else {
                variantsLoaded++;
            }
        }
        report("valid variants refused", failures);
    }

    /** Fields is runtime/bundle/schema.py's table, row for row, with its DIMS and CONDITIONS. */
    @Test
    @SuppressWarnings("unchecked")
    public void theFormatsTableIsPythons() {
        Map<String, Object> schema = (Map<String, Object>) golden.get("schema");
        List<String> python = new ArrayList<>();
        for (Object row : (List<?>) schema.get("fields")) {
            List<Object> r = new ArrayList<>((List<?>) row);
            for (int i : new int[] {3, 4}) {  // bounds as doubles: Python writes some as integers
                r.set(i, r.get(i) == null ? null : ((Number) r.get(i)).doubleValue());
            }
            python.add(r.toString());
        }
        List<String> java = new ArrayList<>();
        for (Fields.Field f : Fields.FIELDS) {
            java.add(Arrays.asList(f.path, f.kind, f.need, f.low, f.high, f.dtype, f.shape, f.choices, f.text, f.open)
                    .toString());
        }
        assertEquals(String.join("\n", python), String.join("\n", java));
        Map<String, Object> dims = (Map<String, Object>) schema.get("dims");
        assertEquals(dims.keySet(), Fields.DIMS.keySet());
        for (Map.Entry<String, Object[]> d : Fields.DIMS.entrySet()) {
            List<?> p = (List<?>) dims.get(d.getKey());
            assertEquals(Arrays.asList(p.get(0), ((Long) p.get(1)).intValue(), ((Long) p.get(2)).intValue()),
                    Arrays.asList(d.getValue()));
        }
        assertEquals(schema.get("conditions"), Fields.CONDITIONS);
    }

    /** Text's UNPRINTABLE and INVISIBLE are runtime/text.py's, and escape and fold answer as Python's. */
    @Test
    @SuppressWarnings("unchecked")
    public void theTextRulesArePythons() {
        Map<String, Object> text = (Map<String, Object>) golden.get("text");
        assertEquals(text.get("unprintable").toString(), Arrays.deepToString(Text.UNPRINTABLE));
        assertEquals(text.get("invisible").toString(), Arrays.deepToString(Text.INVISIBLE));
        List<String> failures = new ArrayList<>();
        for (Map<String, Object> c : maps(text.get("cases"))) {
            String s = (String) c.get("text");
            List<Object> python = Arrays.asList(c.get("escaped"), c.get("folded"), ((Long) c.get("unprintable")).intValue());
            List<Object> java = Arrays.asList(Text.escape(s), Text.fold(s), Text.unprintable(s));
            if (!python.equals(java)) {
                failures.add(Text.escape(s) + ": python " + python + ", java " + java);
            }
        }
        report("texts escaped or folded otherwise", failures);
    }

    // ------------------------------------------------------------------ helpers

    /** The refusal's message, or null if the bytes were accepted (anything else is a failure). */
    private static String refusal(byte[] data) {
        try {
            BundleReader.read(data);
            return null;
        } catch (BundleException e) {
            return e.getMessage();
        }
    }

    private static String compare(List<String> labels, Map<String, Object> c, Prediction p) {
        List<?> expected = (List<?>) c.get("scores");
        List<Double> actual = new ArrayList<>(p.scores().values());
        for (int i = 0; i < expected.size(); i++) {
            double e = (Double) expected.get(i);
            double diff = Math.abs(e - actual.get(i)) / Math.max(1.0, Math.abs(e));
            synchronized (GoldenConformanceTest.class) {
                largestDifference = Math.max(largestDifference, diff);
            }
            if (!(diff <= TOLERANCE)) {
                return "score of " + labels.get(i) + ": python " + e + ", java " + actual.get(i);
            }
        }
        return c.get("label").equals(p.label()) ? null : "label " + p.label() + ", python " + c.get("label");
    }

    @SuppressWarnings("unchecked")
    private static List<Map<String, Object>> maps(Object list) {
        return (List<Map<String, Object>>) list;
    }

    private static float[] embedding(Map<String, Object> c) {
        byte[] bin = (byte[]) c.get("embedding");
        float[] out = new float[bin.length / 4];
        ByteBuffer.wrap(bin).order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer().get(out);
        return out;
    }

    private static int[] ints(Object list) {
        return ((List<?>) list).stream().mapToInt(x -> ((Long) x).intValue()).toArray();
    }

    private static List<Integer> boxed(int[] ids) {
        List<Integer> out = new ArrayList<>();
        for (int id : ids) {
            out.add(id);
        }
        return out;
    }

    private static String describe(Map<String, Object> c) {
        String text = (String) c.get("text");
        return "text " + Text.show(text);
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
