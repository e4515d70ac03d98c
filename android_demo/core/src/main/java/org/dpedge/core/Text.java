package org.dpedge.core;

import java.util.Locale;

/**
 * Text from a bundle or an engine, made safe in one place, and the label rules
 * (format/1/schema.json "text", format/1/unicode.json).
 *
 * <p>{@link #escape} is the one function such text passes where it leaves the core (every
 * exception's message, and an app's labels on screen): each unprintable code point becomes a
 * visible escape ({@code \x1b}, {@code \u202e}, {@code \U000e0041}), so it cannot act on a
 * terminal or reorder a line. Labels must not look alike: two labels with one
 * {@link #labelKey} are refused.
 */
public final class Text {
    private static final Unicode.Set UNPRINTABLE = new Unicode.Set(Contract.ints(Contract.get("text.unprintable")));

    private Text() {
    }

    /** The number of code points of s. */
    static int length(String s) {
        return s.codePointCount(0, s.length());
    }

    /** The first unprintable code point of s, or -1. */
    public static int unprintable(String s) {
        return UNPRINTABLE.first(s);
    }

    /** The first code point of s that the contract's Unicode version does not assign, or -1. */
    public static int unassigned(String s) {
        return Unicode.UNASSIGNED.first(s);
    }

    /** Whether s holds a code point outside the blank set (it prints as something). */
    public static boolean showsSomething(String s) {
        return Unicode.remove(Unicode.codePoints(s), Unicode.BLANK).length > 0;
    }

    /**
     * s with every unprintable code point shown as an escape ({@code \t \n \r}, {@code \xNN}
     * below U+0100, u-escapes of 4 and U-escapes of 8 hex digits); escaping twice changes nothing.
     */
    public static String escape(String s) {
        if (s == null || unprintable(s) < 0) {
            return s;
        }
        StringBuilder out = new StringBuilder();
        for (int i = 0; i < s.length(); ) {
            int cp = s.codePointAt(i);
            i += Character.charCount(cp);
            int tnr = "\t\n\r".indexOf(cp);
            if (!UNPRINTABLE.contains(cp)) {
                out.appendCodePoint(cp);
            } else if (tnr >= 0) {
                out.append('\\').append("tnr".charAt(tnr));
            } else {
                out.append(cp < 0x100 ? hex("\\x", cp, 2) : cp < 0x10000 ? hex("\\u", cp, 4) : hex("\\U", cp, 8));
            }
        }
        return out.toString();
    }

    /** A JSON text with every unprintable code point written as a JSON escape (the same JSON value). */
    public static String escapeJson(String line) {
        StringBuilder out = new StringBuilder();
        for (int i = 0; i < line.length(); ) {
            int cp = line.codePointAt(i);
            i += Character.charCount(cp);
            if (!UNPRINTABLE.contains(cp)) {
                out.appendCodePoint(cp);
            } else if (cp < 0x10000) {
                out.append(hex("\\u", cp, 4));
            } else {
                out.append(hex("\\u", 0xD800 + ((cp - 0x10000) >> 10), 4)).append(hex("\\u", 0xDC00 + (cp & 0x3FF), 4));
            }
        }
        return out.toString();
    }

    private static String hex(String prefix, int cp, int digits) {
        return String.format(Locale.ROOT, "%s%0" + digits + "x", prefix, cp);
    }

    /** What a text reads as: NFKD, default-ignorable code points removed, NFKD again. */
    static int[] fold(int[] cps) {
        return Unicode.nfkd(Unicode.remove(Unicode.nfkd(cps), Unicode.DEFAULT_IGNORABLE));
    }

    /** What a label looks like: fold, each code point's UTS #39 prototype, fold again. */
    public static String labelKey(String s) {
        return Unicode.string(fold(Unicode.prototypes(fold(Unicode.codePoints(s)))));
    }

    /** A code point as U+XXXX, as messages name it. */
    static String uPlus(int cp) {
        return String.format(Locale.ROOT, "U+%04X", cp);
    }
}
