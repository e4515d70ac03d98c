package org.dpedge.core;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.fail;

import java.util.List;
import java.util.Map;

import org.junit.Test;

/** Strict JSON as the contract reads a tokenizer.json (section 6). */
public class JsonTest {
    private static final long MAX = 9007199254740991L;

    private static Object parse(String s) throws Json.Invalid {
        return Json.parse(s, 16, MAX);
    }

    private static void refused(String s) {
        try {
            parse(s);
            fail("accepted " + Text.escape(s));
        } catch (Json.Invalid expected) {
            // refused
        }
    }

    private static String nested(int depth) {
        return "[".repeat(depth) + "]".repeat(depth);
    }

    @Test
    public void refusesWhatParsersReadDifferently() {
        for (String s : new String[] {"{\"a\": 1, \"a\": 2}", "-0", "[-0]", "9007199254740992", "-9007199254740992",
            "\"\\ud800\"", "\"\\udc00\\ud800\"", "{\"\\ud83d\": 1}", "NaN", "Infinity", "-Infinity", "\ufeff{}",
            "{}\u00a0", "\f{}", "01", "[1,]", "{\"a\":1,}", "\"a\u0001\"", "'a'", "\"\\x41\"", "\"\\u12G4\"",
            "1.", ".5", "1e", "", "{} {}", "tru", "[1 2]"}) {
            refused(s);
        }
        refused(nested(17));
    }

    @Test
    public void readsStrictJson() throws Exception {
        assertEquals(MAX, parse("9007199254740991"));
        assertEquals(-MAX, parse("-9007199254740991"));
        assertEquals(1.0, parse("1.0"));
        assertEquals(-0.0, parse("-0.0"));
        assertEquals(Double.POSITIVE_INFINITY, parse("1e400"));  // a float, as the reference reads it
        assertEquals("\ud83d\ude00 \u00e9/", parse("\"\\ud83d\\ude00 \\u00E9\\/\""));
        assertEquals(List.of(1L, true, false), parse(" [1 ,true,\tfalse]\r\n"));
        Map<?, ?> m = (Map<?, ?>) parse("{\"b\": null, \"a\": {}}");
        assertEquals(List.of("b", "a"), List.copyOf(m.keySet()));
        parse(nested(16));
    }
}
