package org.dpedge.core;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertSame;
import static org.junit.Assert.fail;

import java.io.File;
import java.nio.file.Files;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

import org.junit.Test;

/**
 * Encoder packs (format 1.1) where the corpus's cases cannot reach: the accepted digests in
 * either case, a statistics bundle's encoder being its pack's, the encoder's family (1.2) as
 * read from a bundle and from a pack, and the magic the container expects deciding whether a
 * file without its digest is truncated.
 */
public class EncoderPackTest {
    private static final File CORPUS = ConformanceTest.corpora().get(0);

    private static EncoderPack pack() throws BundleException {
        return BundleReader.readPack(new File(CORPUS, "packs/tiny-onnx.dpedge-encoder"));
    }

    private static String code(ThrowingRead read) {
        try {
            read.run();
        } catch (BundleException e) {
            return e.code() + " at '" + e.path() + "'";
        }
        fail("accepted");
        return null;
    }

    private interface ThrowingRead {
        void run() throws BundleException;
    }

    @Test
    public void acceptsTheDigestsTheApplicationGivesInEitherCase() throws Exception {
        EncoderPack pack = pack();
        File file = new File(CORPUS, "packs/tiny-onnx.dpedge-encoder");
        assertEquals(64, pack.sha256().length());
        assertArrayEquals(pack.digest(), BundleReader.readPack(file, List.of(pack.sha256())).digest());
        BundleReader.readPack(file, List.of("00", pack.sha256().toUpperCase(Locale.ROOT)));
        assertEquals("pack.untrusted at ''", code(() -> BundleReader.readPack(file, List.of())));
    }

    @Test
    public void aStatisticsBundleIsScoredWithItsPacksEncoder() throws Exception {
        EncoderPack pack = pack();
        Bundle b = BundleReader.read(new File(CORPUS, "accept/statistics.dpedge"), pack);
        assertSame(pack.encoder(), b.encoder());
        assertArrayEquals(pack.digest(), b.encoderPack());
        assertEquals(pack.encoder().dim(), b.dim());
        assertEquals(pack.encoder().externalData().size(), b.encoder().externalData().size());
        assertNull(BundleReader.read(new File(CORPUS, "accept/tables.dpedge")).encoderPack());
    }

    @Test
    public void anEncoderCarriesItsFamilyInABundleAndInAPack() throws Exception {
        assertEquals("bert", pack().encoder().family());  // no encoder.family: bert (1.2)
        assertEquals("bert", BundleReader.read(new File(CORPUS, "accept/variants/family-bert-named.dpedge")).encoder()
                .family());
        assertEquals("mpnet", BundleReader.read(new File(CORPUS, "accept/mpnet.dpedge")).encoder().family());
        EncoderPack mpnet = BundleReader.readPack(new File(CORPUS, "packs/tiny-mpnet.dpedge-encoder"));
        assertEquals("mpnet", mpnet.encoder().family());
        assertSame(mpnet.encoder(), BundleReader.read(new File(CORPUS, "accept/statistics-mpnet.dpedge"), mpnet)
                .encoder());
    }

    @Test
    public void aFileWithoutItsDigestIsTruncatedOnlyAsWhatItSaysItIs() throws Exception {
        byte[] pack = Files.readAllBytes(new File(CORPUS, "packs/tiny-onnx.dpedge-encoder").toPath());
        byte[] cut = Arrays.copyOf(pack, pack.length - 1);
        assertEquals("container.truncated at ''", code(() -> BundleReader.readPack(cut)));
        assertEquals("container.not_bundle at ''", code(() -> BundleReader.read(cut)));
        assertEquals("version.format at 'format'", code(() -> BundleReader.read(pack)));
    }
}
