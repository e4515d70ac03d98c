package org.dpedge.core;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.io.File;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.Test;

/**
 * The query rules, the engine's answers and budgets, on a corpus bundle (D = 4) with stand-in
 * engines: what the corpus's engine cases cannot show.
 */
public class ClassifierTest {
    private static final Bundle BUNDLE = read();

    private static Bundle read() {
        try {
            File corpus = ConformanceTest.corpora().get(0);
            return BundleReader.read(new File(corpus, "accept/scoring/blend-with-votes.dpedge"));
        } catch (BundleException e) {
            throw new AssertionError(e);
        }
    }

    private static final float[] CHECK = BUNDLE.encoder().checkEmbedding();

    /** An engine that answers the check text, then {@code answer} for every query. */
    private static TextEncoder engine(TextEncoder answer) {
        int[] check = BUNDLE.encoder().tokenizer().encode(BUNDLE.encoder().checkText());
        return ids -> java.util.Arrays.equals(ids, check) ? CHECK.clone() : answer.embed(ids);
    }

    private static String queryCode(Classifier clf, String text) {
        try {
            clf.classify(text);
        } catch (QueryException e) {
            assertEquals("", e.path());
            return e.code();
        }
        fail("classified " + Text.escape(String.valueOf(text)));
        return null;
    }

    private static BundleException loadError(TextEncoder encoder, double loadSeconds) {
        try {
            new Classifier(BUNDLE, encoder, loadSeconds, 10).close();
        } catch (BundleException e) {
            return e;
        }
        fail("loaded");
        return null;
    }

    @Test
    public void classifiesThroughTheTokenizerEngineAndScorer() throws Exception {
        float[] x = {0.5f, -0.5f, 0.5f, 0.5f};
        try (Classifier clf = new Classifier(BUNDLE, engine(ids -> x.clone()))) {
            assertEquals(1.0, clf.checkCosine(), 1e-6);
            Prediction p = clf.classify("wake me up");
            assertEquals(clf.classifyEmbedding(x).label(), p.label());
            assertArrayEquals(clf.scorer().scores(x),
                    p.scores().values().stream().mapToDouble(Double::doubleValue).toArray(), 0);
        }
    }

    @Test
    public void refusesTextsByTheQueryRulesInOrder() throws Exception {
        try (Classifier clf = new Classifier(BUNDLE, engine(ids -> CHECK.clone()))) {
            assertEquals("query.type", queryCode(clf, null));
            StringBuilder big = new StringBuilder();
            for (int i = 0; i < 1_000_001; i++) {
                big.append('a');
            }
            assertEquals("query.too_long", queryCode(clf, big.toString()));
            assertEquals(clf.classify(big.substring(1)).label(), clf.classify("a").label());  // 1,000,000: fine
            assertEquals("query.too_long", queryCode(clf, "\ud83d\ude00".repeat(1_000_001)));
            assertEquals("query.unicode", queryCode(clf, "a\ud800b"));
            assertEquals("query.unicode", queryCode(clf, "a\udc00"));
            assertEquals("query.empty", queryCode(clf, "\u200b \u2060\t"));
        }
    }

    @Test
    public void refusesAnEmbeddingThatIsNotDFiniteFloats() throws Exception {
        for (float[] bad : new float[][] {{Float.NaN, 0, 0, 0}, {0, Float.POSITIVE_INFINITY, 0, 0}, {1, 0, 0}, null}) {
            try (Classifier clf = new Classifier(BUNDLE, engine(ids -> bad))) {
                assertEquals("query.embedding", queryCode(clf, "wake me up"));
                try {
                    clf.classifyEmbedding(bad);
                    fail("scored a bad embedding");
                } catch (QueryException e) {
                    assertEquals("query.embedding", e.code());
                }
            }
            assertEquals("engine.check", loadError(ids -> bad, 10).code());
            assertEquals("encoder.check_embedding", loadError(ids -> bad, 10).path());
        }
    }

    @Test
    public void anEngineFailureIsRefusedAndItsTextEscaped() throws Exception {
        TextEncoder failing = ids -> {
            throw new IllegalStateException("model says \u001b[2J\u202e");
        };
        try (Classifier clf = new Classifier(BUNDLE, engine(failing))) {
            try {
                clf.classify("wake me up");
                fail("classified");
            } catch (QueryException e) {
                assertEquals("query.engine", e.code());
                assertTrue(e.getMessage(), e.getMessage().contains("model says \\x1b[2J\\u202e"));
            }
        }
        BundleException e = loadError(failing, 10);
        assertEquals("engine.load", e.code());
        assertEquals("encoder.model", e.path());
        assertTrue(e.getMessage(), Text.unprintable(e.getMessage()) < 0 && e.getMessage().contains("\\u202e"));
    }

    /** An engine whose runs last until cancel() is called. */
    private static final class Stuck implements TextEncoder {
        final AtomicInteger cancelled = new AtomicInteger();
        volatile CountDownLatch release = new CountDownLatch(1);
        final boolean checkFirst;

        Stuck(boolean checkFirst) {
            this.checkFirst = checkFirst;
        }

        @Override
        public float[] embed(int[] ids) throws Exception {
            int[] check = BUNDLE.encoder().tokenizer().encode(BUNDLE.encoder().checkText());
            if (checkFirst && cancelled.get() == 0 && release.getCount() > 0 && java.util.Arrays.equals(ids, check)) {
                return CHECK.clone();
            }
            if (!release.await(20, TimeUnit.SECONDS)) {
                throw new IllegalStateException("never cancelled");
            }
            throw new IllegalStateException("terminated");
        }

        @Override
        public void cancel() {
            cancelled.incrementAndGet();
            release.countDown();
        }
    }

    @Test
    public void aRunPastItsBudgetIsCancelledAndRefused() throws Exception {
        Stuck atLoad = new Stuck(false);
        BundleException e = loadError(atLoad, 0.2);
        assertEquals("engine.budget", e.code());
        assertEquals("encoder.model", e.path());
        assertEquals(1, atLoad.cancelled.get());

        Stuck atQuery = new Stuck(true);
        try (Classifier clf = new Classifier(BUNDLE, atQuery, 10, 0.2)) {
            long start = System.nanoTime();
            assertEquals("query.engine", queryCode(clf, "wake me up"));
            assertTrue(System.nanoTime() - start < 5_000_000_000L);
            assertEquals(1, atQuery.cancelled.get());
        }
    }
}
