package org.dpedge.core;

/**
 * Python's notions of "blank" and "length" for strings.
 *
 * <p>Why: the reference runtime refuses a text when {@code not text.strip()} and counts
 * {@code len(text)} in code points. Java's {@code String.strip()} uses
 * {@code Character.isWhitespace}, which disagrees with Python's {@code str.isspace} (it
 * excludes U+00A0, U+2007 and U+202F, for one), and {@code String.length()} counts UTF-16
 * units. Using these helpers keeps the Java answers identical to Python's.
 */
final class PyText {
    private PyText() {
    }

    /** Python's {@code str.isspace()} for one code point (bidi WS/B/S or category Zs). */
    static boolean isSpace(int cp) {
        switch (cp) {
            case 0x09: case 0x0A: case 0x0B: case 0x0C: case 0x0D:
            case 0x1C: case 0x1D: case 0x1E: case 0x1F: case 0x20:
            case 0x85: case 0xA0: case 0x1680:
            case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000:
                return true;
            default:
                return cp >= 0x2000 && cp <= 0x200A;
        }
    }

    /** Python's {@code not s.strip()}: empty or only whitespace. */
    static boolean isBlank(String s) {
        for (int i = 0; i < s.length(); ) {
            int cp = s.codePointAt(i);
            if (!isSpace(cp)) {
                return false;
            }
            i += Character.charCount(cp);
        }
        return true;
    }

    /** Python's {@code len(s)}: the number of code points. */
    static int length(String s) {
        return s.codePointCount(0, s.length());
    }
}
