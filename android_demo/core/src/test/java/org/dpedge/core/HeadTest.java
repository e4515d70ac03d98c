package org.dpedge.core;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.util.ArrayList;
import java.util.List;

import org.junit.Test;

/**
 * The head (format 1.1) beyond what the corpus asks: the contract's accountant against values
 * the reference printed (runtime/bundle/accounting.py head_epsilon), and the guarantee's words
 * against runtime/describe.py privacy_summary: delta in words, never "pure", for a bundle with
 * a head; a person-level head (1.3) with its unit_count, the noisy number of persons.
 */
public class HeadTest {
    private static File corpusFile(String name) {
        return new File(ConformanceTest.corpora().get(0), name);
    }

    /** (noise multiplier, sample rate, steps, delta, the reference's head_epsilon), printed by Python's repr. */
    private static final double[][] REFERENCE = {
        {1.1, 0.1, 1000, 1e-5, 22.89658105071254},
        {0.5, 1.0, 10, 1e-6, 52.42921619684438},
        {1.0, 1.0, 1, 1e-5, 4.752728336819822},
        {4.0, 0.01, 10000, 1e-7, 1.2906075571818785},
        {0.01, 1e-9, 1, 1e-12, 9984.798195080915},
        {100.0, 0.5, 1000000, 1e-3, 30.52239843364672},
        {0.7, 0.999, 3, 1e-9, 18.398879825285825},
        {2.0, 1e-4, 1, 1e-5, 0.08517093660624253},
    };

    @Test
    public void theAccountantAgreesWithTheReference() {
        for (double[] r : REFERENCE) {
            double got = Accountant.headEpsilon(r[0], r[1], (long) r[2], r[3]);
            // The same operations: only the libraries' last bits may differ (the contract allows 1e-6).
            assertEquals("head_epsilon(" + r[0] + ", " + r[1] + ", " + (long) r[2] + ", " + r[3] + ")", r[4], got,
                    1e-12 * r[4]);
        }
    }

    @Test
    public void theAccountantIsNeverNegativeAndGrowsWithSteps() {
        double before = 0;
        for (long steps = 1; steps <= 100_000; steps *= 10) {
            double eps = Accountant.headEpsilon(1.0, 0.01, steps, 1e-5);
            assertTrue(eps >= before);
            before = eps;
        }
        assertEquals(0.0, Accountant.headEpsilon(1e6, 1e-9, 1, 1e-3), 0.0);
    }

    @Test
    public void aHeadBundleStatesItsDeltaInWordsAndNeverPure() throws Exception {
        Bundle b = BundleReader.read(corpusFile("accept/scoring/head.dpedge"));
        assertNotNull(b.head());
        assertEquals(1e-5, b.delta(), 0.0);
        assertEquals(b.delta(), b.head().delta(), 0.0);
        assertEquals(400, b.head().steps());
        String said = b.privacySummary();
        // runtime/describe.py privacy_summary of the same bundle, word for word: what delta is in the
        // contract's words (schema.json "wording" "delta"), never "a probability that the bound fails".
        String summary = Contract.string("wording.delta.summary");
        assertEquals(summary, Bundle.deltaSummary());
        assertEquals(Contract.string("wording.delta.statement"), Bundle.deltaStatement());
        assertEquals("epsilon = 4.4, delta = 1e-05 (" + summary + ") per one record, spent on class_counts eps 0.4 "
                + "(scale 2.5), head eps 4 delta 1e-05 (DP-SGD, 400 steps, sample rate 0.25, noise multiplier "
                + "5.893434); discrete Laplace and Gaussian noise", said);
        assertFalse(said, said.contains("may fail"));
        assertFalse(said, said.contains("pure DP"));
        assertFalse(said, said.contains("delta = 0 "));
    }

    @Test
    public void aPersonLevelHeadComesWithItsUnitCount() throws Exception {
        Bundle b = BundleReader.read(corpusFile("accept/scoring/head-three-records-per-person.dpedge"));
        assertNotNull(b.head());
        assertEquals(3, b.recordsPerUnit());
        // unit_count is a statistic, last in release order; its sensitivity is 1 whatever K.
        assertEquals(List.of("class_counts", "unit_count"), new ArrayList<>(b.releases().keySet()));
        PrivacyFacts units = b.releases().get("unit_count");
        assertEquals(1, units.sensitivityL1());
        assertEquals(3, b.releases().get("class_counts").sensitivityL1());
        // The reference reader's unit_count and privacy_summary of the same bundle.
        assertEquals(Integer.valueOf(57), b.unitCount);
        assertEquals("epsilon = 4.42, delta = 1e-05 (" + Bundle.deltaSummary() + ") per one person, up to 3 records, "
                + "spent on class_counts eps 0.4 (scale 7.5), unit_count eps 0.02 (scale 50), head eps 4 delta 1e-05 "
                + "(DP-SGD, 400 steps, sample rate 0.25, noise multiplier 5.893434); discrete Laplace and Gaussian "
                + "noise", b.privacySummary());
        // A head for one record has none.
        assertNull(BundleReader.read(corpusFile("accept/scoring/head.dpedge")).unitCount);
    }

    @Test
    public void aPureBundleSaysPureDp() throws Exception {
        Bundle b = BundleReader.read(corpusFile("accept/three-records-per-person.dpedge"));
        assertNull(b.head());
        assertEquals(0.0, b.delta(), 0.0);
        assertEquals("epsilon = 8, delta = 0 (pure DP) per one person, up to 3 records, spent on class_counts eps 0.4 "
                + "(scale 7.5), class_sums eps 6.8 (scale 60.44117647), votes eps 0.8 (scale 15); discrete Laplace "
                + "noise", b.privacySummary());
    }

    @Test
    public void numbersAreWrittenAsPythonsTenSignificantDigits() {
        double[] x = {1e-5, 1e-12, 0.0001, 0.00012345678915, 123456789.5, 1234567890.0, 12345678901.0, 2.5, 50.0,
            5.893434, -3.25e-7, 1e16, 0.1 + 0.2, 18.026315789473685, 9999999999.5, 0.0};
        String[] python = {"1e-05", "1e-12", "0.0001", "0.0001234567891", "123456789.5", "1234567890", "1.23456789e+10",
            "2.5", "50", "5.893434", "-3.25e-07", "1e+16", "0.3", "18.02631579", "1e+10", "0"};
        for (int i = 0; i < x.length; i++) {
            assertEquals(python[i], Bundle.g10(x[i]));
        }
    }
}
