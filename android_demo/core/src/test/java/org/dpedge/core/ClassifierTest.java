package org.dpedge.core;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.junit.Test;

/** The facade on the synthetic bundle, with stub encoders standing in for the native engine. */
public class ClassifierTest {
    private static final float[] X = {0.6f, -0.8f, 0.1f};

    @Test
    public void predictsThroughPrefixTokenizerEncoderAndScorer() throws Exception {
        Map<String, Object> doc = TestBundles.document();
        TestBundles.put(doc, "encoder.text_prefix", "play ");
        List<int[]> seen = new ArrayList<>();
        Classifier clf = new Classifier(TestBundles.read(TestBundles.encoderLast(doc)), ids -> {
            seen.add(ids);
            return X.clone();
        });
        Prediction p = clf.predict("Wake me up!");
        assertArrayEquals(new int[] {2, 7, 4, 5, 6, 10, 3}, seen.get(0));  // [CLS] play wake me up ! [SEP]
        assertArrayEquals(clf.scorer().scores(X), p.scores().values().stream().mapToDouble(Double::doubleValue).toArray(), 0);
        assertEquals(p.label(), clf.predictEmbedding(X).label());
    }

    @Test
    public void verifyAcceptsTheExportersEmbeddingAndRefusesAnother() throws Exception {
        Bundle b = TestBundles.read(TestBundles.document());
        List<int[]> seen = new ArrayList<>();
        double cos = new Classifier(b, ids -> {
            seen.add(ids);
            return new float[] {0.6f, 0.8f, 0f};
        }).verify();
        assertEquals(1.0, cos, 1e-9);
        assertArrayEquals(new int[] {2, 4, 5, 6, 3}, seen.get(0));  // the check text, "wake me up"
        try {
            new Classifier(b, ids -> new float[] {0.8f, -0.6f, 0f}).verify();
            fail("an engine computing another embedding was accepted");
        } catch (BundleException e) {
            assertTrue(e.getMessage(), e.getMessage().startsWith("the onnx encoder computes a different embedding"));
        }
    }

    @Test
    public void refusesTextsPythonRefuses() throws Exception {
        Classifier clf = new Classifier(TestBundles.read(TestBundles.document()), ids -> X.clone());
        String[][] cases = {{null, "text must be a string, got null"}, {" \u3000\n", "empty text: there is nothing to classify"},
            {"a\uD800b", "not valid UTF-8 (lone surrogate U+D800 at character 1)"}};
        for (String[] c : cases) {
            try {
                clf.predict(c[0]);
                fail("accepted " + c[0]);
            } catch (IllegalArgumentException e) {
                assertEquals(c[1], e.getMessage());
            }
        }
        assertEquals(clf.predictEmbedding(X).label(), clf.predict("\u00a0x").label());  // NBSP is space in Python, x is not
    }

    @Test
    public void refusesAnEmbeddingOfTheWrongSize() throws Exception {
        Classifier clf = new Classifier(TestBundles.read(TestBundles.document()), ids -> new float[2]);
        try {
            clf.predict("wake me up");
            fail("a 2-d embedding was accepted");
        } catch (BundleException e) {
            assertEquals("encoder returned 2 values, expected 3", e.getMessage());
        }
    }
}
