package org.dpedge.core;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

import org.junit.Test;

/** The text rules on hand examples (the golden data holds them to runtime/text.py on many more). */
public class TextTest {
    @Test
    public void escapeShowsEveryUnprintableCodePoint() {
        assertEquals("ok\\x1b[2J\\u202e", Text.escape("ok\u001b[2J\u202e"));
        assertEquals("a\\tb\\u2066c\\U000e0041", Text.escape("a\tb\u2066c\uDB40\uDC41"));
        assertEquals("caf\u00e9 \ud83d\udc4d", Text.escape("caf\u00e9 \ud83d\udc4d"));  // printable: as it is
        assertEquals(0x1b, Text.unprintable("ok\u001b"));
        assertEquals(-1, Text.unprintable("fine \u200b"));  // invisible, but not unprintable
    }

    @Test
    public void foldMakesLookAlikesEqual() {
        assertEquals(Text.fold("Billing"), Text.fold("\uff22\uff49\uff4c\uff4c\uff49\uff4e\uff47\u200b"));
        assertEquals(Text.fold("file"), Text.fold("\ufb01le\u200d"));
        assertEquals("e\u0301".length(), 2);
        assertEquals("\u00e9", Text.fold("e\u0301"));
        assertEquals("ab", Text.fold("a\u00adb"));
        assertTrue(Text.isBlank(Text.fold("\u200b\u2060 ")));
        assertFalse(Text.fold("alarm\u200ctimer").equals(Text.fold("alarm timer")));
    }
}
