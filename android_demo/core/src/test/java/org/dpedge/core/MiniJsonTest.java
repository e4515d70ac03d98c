package org.dpedge.core;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.util.Arrays;
import java.util.List;
import java.util.Map;

import org.junit.Test;

/** The hand-written JSON parser: escapes, numbers, structure, and strictness. */
public class MiniJsonTest {

    @Test
    public void parsesEveryEscape() {
        assertEquals("a\"b\\c/d\be\ff\ng\rh\ti", MiniJson.parse("\"a\\\"b\\\\c\\/d\\be\\ff\\ng\\rh\\ti\""));
        assertEquals("\u00e9\u4e2d", MiniJson.parse("\"\\u00e9\\u4E2D\""));
        assertEquals("\u0000", MiniJson.parse("\"\\u0000\""));
    }

    @Test
    public void joinsSurrogatePairEscapesIntoOneCodePoint() {
        String s = (String) MiniJson.parse("\"x\\ud83d\\ude00y\"");
        assertEquals("x\uD83D\uDE00y", s);
        assertEquals(3, s.codePointCount(0, s.length()));
        assertEquals(0x1F600, s.codePointAt(1));
    }

    @Test
    public void keepsRawNonAsciiText() {
        assertEquals("naïve 東京 😀", MiniJson.parse("\"naïve 東京 😀\""));
    }

    @Test
    public void parsesNumbersLiteralsAndStructure() {
        Map<?, ?> m = (Map<?, ?>) MiniJson.parse(
                " {\"a\": [1, -2, 0, 3.5, -0.25e2, 1E3, 9223372036854775807, 99999999999999999999],"
                + " \"b\": {\"t\": true, \"f\": false, \"n\": null}, \"c\": [], \"d\": {}} ");
        List<?> a = (List<?>) m.get("a");
        assertEquals(Arrays.asList(1L, -2L, 0L, 3.5, -25.0, 1000.0, Long.MAX_VALUE, 1e20), a);
        Map<?, ?> b = (Map<?, ?>) m.get("b");
        assertEquals(Boolean.TRUE, b.get("t"));
        assertEquals(Boolean.FALSE, b.get("f"));
        assertTrue(b.containsKey("n"));
        assertNull(b.get("n"));
        assertTrue(((List<?>) m.get("c")).isEmpty());
        assertTrue(((Map<?, ?>) m.get("d")).isEmpty());
    }

    @Test
    public void repeatedKeyIsRefused() {
        try {
            MiniJson.parse("{\"k\": 1, \"k\": 2}");
            fail("a repeated key was accepted");
        } catch (MiniJson.DuplicateKey e) {
            assertEquals("k", e.key);
        }
    }

    @Test
    public void rejectsMalformedDocuments() {
        String[] bad = {
            "", "{", "[1,]", "{\"a\":1,}", "{a:1}", "[01]", "[1.]", "[.5]", "[-]", "[1e]", "tru", "nul",
            "\"unterminated", "\"bad \\x escape\"", "\"\\u12\"", "\"\\u12G4\"", "\"raw\ncontrol\"",
            "\"\\ud83d alone\"", "\"\\ude00 alone\"", "\"\\ud83d\\u0041\"", "[1] 2", "{\"a\" 1}", "['x']",
            "[\"\\u\uff11\uff12\uff13\uff14\"]",
        };
        for (String s : bad) {
            try {
                MiniJson.parse(s);
                fail("accepted " + s);
            } catch (IllegalArgumentException expected) {
                assertTrue(expected.getMessage(), expected.getMessage().startsWith("invalid JSON at offset"));
            }
        }
    }

    @Test
    public void limitsNesting() {
        StringBuilder ok = new StringBuilder();
        StringBuilder deep = new StringBuilder();
        for (int i = 0; i < MiniJson.MAX_DEPTH; i++) {
            ok.append('[');
        }
        for (int i = 0; i < MiniJson.MAX_DEPTH; i++) {
            ok.append(']');
        }
        MiniJson.parse(ok.toString());
        for (int i = 0; i < 100_000; i++) {
            deep.append('[');
        }
        try {
            MiniJson.parse(deep.toString());
            fail("accepted a deeply nested document");
        } catch (IllegalArgumentException expected) {
            assertTrue(expected.getMessage().contains("nested"));
        }
    }
}
