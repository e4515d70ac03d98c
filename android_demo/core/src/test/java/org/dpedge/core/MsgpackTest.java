package org.dpedge.core;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.math.BigInteger;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;

import org.junit.Test;

/** The container rules of format 1.0 on raw msgpack, and how values are shown in messages. */
public class MsgpackTest {

    private static Object parse(byte[] data) throws BundleException {
        return Msgpack.parse(data, 0, data.length);
    }

    private static String error(byte[] data) {
        try {
            parse(data);
        } catch (BundleException e) {
            return e.getMessage();
        }
        fail("accepted");
        return null;
    }

    /** A document whose deepest container is {@code depth} deep. */
    private static byte[] nested(int depth) {
        byte[] out = new byte[depth + 1];
        Arrays.fill(out, 0, depth, (byte) 0x91);
        out[depth] = 1;
        return out;
    }

    @Test
    public void containersNestAtMost32Deep() throws Exception {
        assertTrue(parse(nested(32)) instanceof List);
        assertEquals("not a dpedge bundle: containers nest deeper than 32", error(nested(33)));
        assertEquals("not a dpedge bundle: containers nest deeper than 32", error(nested(100_000)));
    }

    @Test
    public void aMapMayNeitherRepeatAKeyNorHaveAKeyThatIsNotAString() {
        assertEquals("a map repeats the key 'k'", error(new byte[] {(byte) 0x82, (byte) 0xa1, 'k', 1, (byte) 0xa1, 'k', 2}));
        assertEquals("a map has a key that is not a string: b'k'", error(new byte[] {(byte) 0x81, (byte) 0xc4, 1, 'k', 1}));
        assertTrue(error(new byte[] {(byte) 0x81, 1, 2}).startsWith("not valid msgpack (ValueError: int is not allowed"));
        // msgpack-python refuses an integer key once its pair is read, before the map's own checks
        byte[] binThenInt = {(byte) 0x82, (byte) 0xc4, 1, 'k', 1, 1, 2};
        assertTrue(error(binThenInt).startsWith("not valid msgpack (ValueError: int is not allowed"));
    }

    @Test
    public void noExtensionTypeIsRead() {
        for (byte[] ext : new byte[][] {{(byte) 0xd4, 3, 0}, {(byte) 0xd6, -1, 0, 0, 0, 0}, {(byte) 0xc7, 0, 5},
                                        {(byte) 0xd4, -1, 0}}) {  // fixext, a timestamp, an empty ext 8, a bad timestamp
            assertEquals(Msgpack.EXTENSION, error(ext));
        }
    }

    /** A file of n bytes holds at most n / 64 + 4096 entries, a container counting its length plus one. */
    @Test
    public void theValueBudgetFollowsTheFileSize() throws Exception {
        // An array16 of n zeros: n + 3 bytes, n + 1 entries; (n + 3) / 64 + 4096 allowed.
        byte[] fits = new byte[3 + 4160];
        fits[0] = (byte) 0xdc;
        fits[1] = 0x10;
        fits[2] = 0x40;
        assertEquals(4160, ((List<?>) parse(fits)).size());
        byte[] over = new byte[3 + 4161];
        over[0] = (byte) 0xdc;
        over[1] = 0x10;
        over[2] = 0x41;
        assertEquals("not a dpedge bundle: it holds more msgpack values than 4164 bytes may", error(over));
        byte[] huge = {(byte) 0xdd, 0, 1, (byte) 0x86, (byte) 0xa1};  // 100001 entries declared
        assertEquals("not valid msgpack (ValueError: 100001 exceeds max_array_len(100000))", error(huge));
    }

    @Test
    public void bytesAreReadOnlyWhenThereAreEnough() {
        assertEquals("not valid msgpack (ValueError: Unpack failed: incomplete input)",
                error(new byte[] {(byte) 0xdb, 0x7f, -1, -1, -1, 'a'}));  // a 2 GB string declared
        assertEquals("not valid msgpack (ExtraData: bytes after the document)", error(new byte[] {1, 2}));
        assertEquals("not valid msgpack (UnicodeDecodeError: a string is not valid UTF-8)",
                error(new byte[] {(byte) 0xa2, (byte) 0xed, (byte) 0xa0}));
        assertEquals("not valid msgpack (FormatError: reserved byte 0xc1)", error(new byte[] {(byte) 0xc1}));
    }

    @Test
    public void floatsAndIntegersKeepTheirMsgpackType() throws Exception {
        assertEquals(1.5, parse(new byte[] {(byte) 0xca, 0x3f, (byte) 0xc0, 0, 0}));  // float32
        assertEquals(7L, parse(new byte[] {(byte) 0xcf, 0, 0, 0, 0, 0, 0, 0, 7}));
        assertEquals(new BigInteger("18446744073709551615"), parse(new byte[] {(byte) 0xcf, -1, -1, -1, -1, -1, -1, -1, -1}));
        Map<?, ?> m = (Map<?, ?>) parse(TestBundles.pack(TestBundles.map("b", 2L, "a", 1L)));
        assertEquals(Arrays.asList("b", "a"), Arrays.asList(m.keySet().toArray()));  // file order
    }

    @Test
    public void valuesAreShownAsTheReaderShowsThem() {
        assertEquals("\"it's\"", Text.show("it's"));
        assertEquals("'a\\x1b[2J\\u202e'", Text.show("a\u001b[2J\u202e"));
        assertEquals("[1, 'x', None, True, 2.5, 1e-06, ...]",
                Text.show(Arrays.asList(1L, "x", null, true, 2.5, 1e-6, 7L)));
        assertEquals("{'a': [[...]], 'b': 1}",
                Text.show(Map.of("b", 1L, "a", Collections.singletonList(Collections.singletonList(1L)))));
        String longText = "x".repeat(100);
        assertEquals("'" + "x".repeat(27) + "..." + "x".repeat(28) + "'", Text.show(longText));
    }

    @Test
    public void numbersAreWrittenAsPythonWritesThem() {
        String[][] repr = {{"8.0", "8.0"}, {"1e-6", "1e-06"}, {"0.0001", "0.0001"}, {"1e16", "1e+16"},
            {"1e15", "1000000000000000.0"}, {"0.30000000000000004", "0.30000000000000004"}, {"5e-324", "5e-324"},
            {"-0.0", "-0.0"}, {"NaN", "nan"}, {"-Infinity", "-inf"}, {"4294967296", "4294967296.0"}};
        for (String[] c : repr) {
            assertEquals(c[1], Text.pyFloat(Double.parseDouble(c[0])));
        }
        assertEquals("1e-06", Text.num(1e-6));
        assertEquals("1000000", Text.num(1e6));
        assertEquals("2.14748e+15", Text.num(Integer.MAX_VALUE / 1e-6));
        assertEquals("1.84467e+19", Text.num(0x1p64));
        assertEquals("any", Text.num(null));
        assertEquals("2", Text.g(2.0000001, 4));
        assertEquals("0.001234", Text.g(0.0012345, 4));
        assertEquals("1.235e+05", Text.g(123456.0, 4));
        assertEquals("1e-05", Text.g(1e-5, 4));
    }
}
