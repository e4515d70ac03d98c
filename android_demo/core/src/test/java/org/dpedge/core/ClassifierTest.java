package org.dpedge.core;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

import org.junit.Test;

/** The facade on the synthetic bundle, with stub encoders standing in for the native engine. */
public class ClassifierTest {
    private static Bundle bundle() throws BundleException {
        return BundleReader.read(TestBundles.validBundle());
    }

    @Test
    public void predictsThroughTokenizerEncoderHasherAndScorer() throws Exception {
        List<int[]> seen = new ArrayList<>();
        Classifier clf = new Classifier(bundle(), ids -> {
            seen.add(ids);
            return new float[] {0.6f, -0.8f, 0.1f};  // buckets [1, 1]
        });
        Prediction p = clf.predict("Wake me up!");
        assertArrayEquals(new int[] {2, 4, 5, 6, 10, 3}, seen.get(0));
        // votes[t][u][c] = ((t*4+u)*3+c) % 7 - 3, with cells 5 and 6 set to -32768 and 32767:
        // table 0 bucket 1 -> cells 3..5 = [0, 1, -32768]; table 1 bucket 1 -> cells 15..17 = [-2, -1, 0]
        Map<String, Double> scores = p.scores();
        assertEquals(Arrays.asList("alarm", "music", "weather"), new ArrayList<>(scores.keySet()));
        assertEquals(-2.0, scores.get("alarm"), 0);
        assertEquals(0.0, scores.get("music"), 0);
        assertEquals(-32768.0, scores.get("weather"), 0);
        assertEquals("music", p.label());
        assertEquals(p.label(), clf.predictEmbedding(new float[] {0.6f, -0.8f, 0.1f}).label());
    }

    /** A format-3 bundle without vote tables: no hasher, the blend of centroids and prior. */
    @Test
    public void classifiesAFormat3BundleWithoutHashing() throws Exception {
        Bundle b = BundleReader.read(TestBundles.seal3(TestBundles.payload3()));
        float[] x = {0.6f, -0.8f, 0.1f};
        Classifier clf = new Classifier(b, ids -> x.clone());
        assertNull(clf.hasher());
        Prediction p = clf.predict("wake me up");
        assertArrayEquals(clf.scorer().scores(x), p.scores().values().stream().mapToDouble(Double::doubleValue)
                .toArray(), 0);
        assertEquals(p.label(), clf.predictEmbedding(x).label());
        assertEquals("alarm", p.label());
        try {
            new Classifier(b, ids -> x.clone(), Scorer.Mode.VOTES);
            fail("votes mode without vote tables");
        } catch (IllegalArgumentException e) {
            assertEquals("this bundle has no vote tables to score with votes", e.getMessage());
        }
        try {
            new SimHasher(b);
            fail("a hasher without hyperplanes");
        } catch (IllegalArgumentException e) {
            assertEquals("this bundle has no vote tables, so no hyperplanes to hash with", e.getMessage());
        }
        // with vote tables (--votes-share) the classifier hashes again
        Classifier tables = new Classifier(BundleReader.read(TestBundles.seal3(TestBundles.payload3Tables())),
                ids -> x.clone());
        assertArrayEquals(new int[] {1, 1}, tables.hasher().buckets(x));
    }

    @Test
    public void refusesTextsPythonRefuses() throws Exception {
        Classifier clf = new Classifier(bundle(), ids -> new float[] {1, 0, 0});
        expectBadText(clf, null, "text must be a string");
        expectBadText(clf, "", "empty text: there is nothing to classify");
        expectBadText(clf, " \t\n\u00a0\u3000\u2028\u001c", "empty text: there is nothing to classify");
        char[] big = new char[Classifier.MAX_TEXT_CHARS + 1];
        Arrays.fill(big, 'a');
        expectBadText(clf, new String(big), "text has 1000001 characters, over the limit of 1000000");
        // 600,000 emoji are 1,200,000 UTF-16 units but only 600,000 characters: accepted.
        String emoji = new String(new char[600_000]).replace("\0", "\uD83D\uDE00");
        assertEquals("music", clf.predict(emoji).label());  // embedding [1, 0, 0]: buckets [1, 0]
        // U+200B is not whitespace to Python, so this text is not blank (it tokenizes to nothing).
        assertEquals("music", clf.predict("\u200b").label());
    }

    @Test
    public void refusesAnEmbeddingOfTheWrongSize() throws Exception {
        Classifier clf = new Classifier(bundle(), ids -> new float[] {1, 0});
        try {
            clf.predict("wake me");
            fail("accepted a 2-d embedding");
        } catch (BundleException e) {
            assertEquals("encoder returned 2 values, expected 3", e.getMessage());
        }
        try {
            clf.predictEmbedding(new float[4]);
            fail("accepted a 4-d embedding");
        } catch (IllegalArgumentException expected) {
            assertTrue(expected.getMessage().contains("must have 3 values"));
        }
    }

    @Test
    public void verifyAcceptsTheExportersEmbeddingAndRefusesAnotherOne() throws Exception {
        int[] checkIds = {2, 4, 5, 6, 3};  // "wake me up"
        Classifier good = new Classifier(bundle(), ids -> {
            assertArrayEquals(checkIds, ids);
            return new float[] {0.61f, 0.79f, 0.01f};
        });
        assertTrue(good.verify() > 0.999);
        Classifier bad = new Classifier(bundle(), ids -> new float[] {0.8f, -0.6f, 0f});
        try {
            bad.verify();
            fail("accepted an engine computing another embedding");
        } catch (BundleException e) {
            assertTrue(e.getMessage(), e.getMessage().contains("computes a different embedding than the exporter did"));
            assertTrue(e.getMessage(), e.getMessage().contains("cosine 0.000 < 0.98"));
        }
        Classifier nan = new Classifier(bundle(), ids -> new float[] {Float.NaN, 0, 0});
        try {
            nan.verify();
            fail("accepted a NaN embedding");
        } catch (BundleException expected) {
            assertTrue(expected.getMessage().contains("cosine NaN"));
        }
    }

    @Test
    public void verifyReturnsNullWithoutACheck() throws Exception {
        Map<String, Object> p = TestBundles.payload();
        TestBundles.sub(p, "encoder").remove("check");
        Classifier clf = new Classifier(BundleReader.read(TestBundles.seal(p)), ids -> {
            throw new AssertionError("no check: the encoder must not run");
        });
        assertNull(clf.verify());
    }

    @Test
    public void passesEncoderFailuresThrough() throws Exception {
        Classifier clf = new Classifier(bundle(), ids -> {
            throw new IllegalStateException("engine crashed");
        });
        try {
            clf.predict("wake me");
            fail("swallowed the encoder's exception");
        } catch (IllegalStateException expected) {
            assertEquals("engine crashed", expected.getMessage());
        }
    }

    @Test
    public void refusesABundleWhoseTokenizerIsNotJson() throws Exception {
        Map<String, Object> p = TestBundles.payload();
        TestBundles.sub(p, "encoder").put("tokenizer_json", "{\"model\": ");
        try {
            BundleReader.read(TestBundles.seal(p));  // the tokenizer family is checked at read time
            fail("accepted a broken tokenizer");
        } catch (BundleException expected) {
            assertTrue(expected.getMessage(),
                    expected.getMessage().startsWith("field 'encoder.tokenizer_json' is not valid JSON"));
        }
    }

    private static void expectBadText(Classifier clf, String text, String phrase) throws Exception {
        try {
            clf.predict(text);
            fail("accepted " + text);
        } catch (IllegalArgumentException e) {
            assertTrue(e.getMessage(), e.getMessage().contains(phrase));
        }
    }
}
