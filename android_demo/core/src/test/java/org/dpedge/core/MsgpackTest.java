package org.dpedge.core;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.math.BigInteger;
import java.util.Arrays;
import java.util.Map;

import org.junit.Test;

/** The msgpack layer's Python parity: limits, key rules, and how values are named and printed. */
public class MsgpackTest {

    private static Map<String, Object> parse(byte[] data) throws BundleException {
        return Msgpack.parseMap(data, 0, data.length, "bundle");
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

    /** msgpack-python's parser stack holds 1024 containers; the 1025th is an error. */
    @Test
    public void nestsUpTo1024ContainersLikePython() {
        byte[] ok = new byte[1025];
        Arrays.fill(ok, 0, 1024, (byte) 0x91);
        ok[1024] = 1;
        assertEquals("bundle is not a dpedge bundle: top level is array, expected a map", error(ok));
        byte[] deep = new byte[1026];
        Arrays.fill(deep, 0, 1025, (byte) 0x91);
        deep[1025] = 1;
        assertTrue(error(deep).startsWith("bundle is not valid msgpack (StackError"));
    }

    @Test
    public void mapRulesFollowPython() throws Exception {
        // {"k": 1, "k": 2}: the last value wins
        assertEquals(2L, parse(new byte[] {(byte) 0x82, (byte) 0xa1, 'k', 1, (byte) 0xa1, 'k', 2}).get("k"));
        // {b"k": 1}: accepted, but a binary key never names a field
        assertTrue(parse(new byte[] {(byte) 0x81, (byte) 0xc4, 1, 'k', 1}).isEmpty());
        // {1: 2}: refused
        assertTrue(error(new byte[] {(byte) 0x81, 1, 2}).contains("not valid msgpack"));
        // a map header claiming more entries than half the input
        assertEquals("bundle is not valid msgpack (ValueError: 4 exceeds max_map_len(2))",
                error(new byte[] {(byte) 0x84, (byte) 0xa1, 'k', 1, 2}));
    }

    @Test
    public void timestampsAreValuesOtherExtensionsAreRefused() throws Exception {
        Object ts = parse(new byte[] {(byte) 0x81, (byte) 0xa1, 't', (byte) 0xd6, -1, 0, 0, 0, 0}).get("t");
        assertEquals("Timestamp", Msgpack.typeName(ts));
        assertTrue(error(new byte[] {(byte) 0xd4, -1, 0}).contains("invalid timestamp data (length 1)"));
        assertEquals("unexpected msgpack extension type 3", error(new byte[] {(byte) 0xd4, 3, 0}));
    }

    @Test
    public void integersAboveLongRangeStayExact() throws Exception {
        byte[] data = {(byte) 0x81, (byte) 0xa1, 'u', (byte) 0xcf, -1, -1, -1, -1, -1, -1, -1, -1};
        assertEquals(new BigInteger("18446744073709551615"), parse(data).get("u"));
        byte[] small = {(byte) 0x81, (byte) 0xa1, 'u', (byte) 0xcf, 0, 0, 0, 0, 0, 0, 0, 7};
        assertEquals(7L, parse(small).get("u"));
        assertEquals("integer", Msgpack.typeName(parse(data).get("u")));
    }

    @Test
    public void printsFloatsLikePythonRepr() {
        String[][] cases = {
            {"8.0", "8.0"}, {"1e-6", "1e-06"}, {"0.0001", "0.0001"}, {"1e16", "1e+16"},
            {"1e15", "1000000000000000.0"}, {"123456789012345678.0", "1.2345678901234568e+17"},
            {"-2.5", "-2.5"}, {"0.30000000000000004", "0.30000000000000004"}, {"5e-324", "5e-324"},
            {"1.7976931348623157e308", "1.7976931348623157e+308"}, {"100.0", "100.0"}, {"12345.678", "12345.678"},
            {"-0.0", "-0.0"}, {"NaN", "nan"}, {"-Infinity", "-inf"},
        };
        for (String[] c : cases) {
            assertEquals(c[1], Msgpack.pyFloat(Double.parseDouble(c[0])));
        }
        assertEquals("0.3333333333333333", Msgpack.pyFloat(1.0 / 3));
    }

    @Test
    public void printsStringsAndBytesLikePythonRepr() {
        assertEquals("\"it's\"", Msgpack.repr("it's"));
        assertEquals("'a\\x00\\u200b\\t\uD83D\uDE00\\xa0'", Msgpack.repr("a\u0000\u200b\t\uD83D\uDE00\u00a0"));
        assertEquals("b\"a'\\x00\\xff\"", Msgpack.repr(new Msgpack.Bin(new byte[] {'a', '\'', 0, -1}, 0, 4)));
        assertEquals("[1, 'x', None, True, 2.5]", Msgpack.repr(Arrays.asList(1L, "x", null, true, 2.5)));
        assertFalse(Msgpack.repr(new Msgpack.Bin(new byte[500], 0, 500)).length() > 500);
    }
}
