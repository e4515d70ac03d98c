package org.dpedge.core;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.math.MathContext;
import java.math.RoundingMode;
import java.text.Normalizer;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/**
 * Text from a bundle made safe in one place, and values shown in messages the way the Python
 * reader shows them ({@code runtime/text.py}, {@code runtime/bundle/reader.py}).
 *
 * <p>Why: labels, descriptions and an engine's messages may carry terminal escapes, bidi
 * controls that reorder a line, tag characters that hide text, or zero-width and compatibility
 * twins that make two labels look alike. {@link #escape} is the one function every such text
 * passes before the core puts it in a message; labels and descriptions may hold none of
 * {@link #UNPRINTABLE}; labels must stay distinct under {@link #fold}. The two tables are
 * Python's, copied exactly: the golden data carries Python's, and a test compares them.
 */
public final class Text {
    /** Refused in printable text, escaped on output (inclusive code point ranges). */
    static final int[][] UNPRINTABLE = {
        {0x0000, 0x001F}, {0x007F, 0x009F}, {0x061C, 0x061C}, {0x200E, 0x200F}, {0x2028, 0x202E},
        {0x2066, 0x2069}, {0xD800, 0xF8FF}, {0xFDD0, 0xFDEF}, {0xFFF9, 0xFFFB}, {0xFFFE, 0xFFFF},
        {0x1FFFE, 0x1FFFF}, {0xE0000, 0xE007F}, {0xF0000, 0x10FFFF},
    };
    /** Unicode's Default_Ignorable_Code_Point: render as nothing, removed before labels are compared. */
    static final int[][] INVISIBLE = {
        {0x00AD, 0x00AD}, {0x034F, 0x034F}, {0x061C, 0x061C}, {0x115F, 0x1160}, {0x17B4, 0x17B5},
        {0x180B, 0x180F}, {0x200B, 0x200F}, {0x202A, 0x202E}, {0x2060, 0x206F}, {0x3164, 0x3164},
        {0xFE00, 0xFE0F}, {0xFEFF, 0xFEFF}, {0xFFA0, 0xFFA0}, {0xFFF0, 0xFFF8}, {0x1BCA0, 0x1BCA3},
        {0x1D173, 0x1D17A}, {0xE0000, 0xE0FFF},
    };

    private Text() {
    }

    static boolean in(int cp, int[][] table) {
        for (int[] r : table) {
            if (cp >= r[0] && cp <= r[1]) {
                return true;
            }
        }
        return false;
    }

    /** The first code point of {@link #UNPRINTABLE} in {@code s}, or -1. */
    public static int unprintable(String s) {
        for (int i = 0; i < s.length(); ) {
            int cp = s.codePointAt(i);
            if (in(cp, UNPRINTABLE)) {
                return cp;
            }
            i += Character.charCount(cp);
        }
        return -1;
    }

    /** {@code s} with each unprintable code point as Python's escape ({@code \x1b}, {@code \u202e}, {@code \U000e0041}). */
    public static String escape(String s) {
        if (unprintable(s) < 0) {
            return s;
        }
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < s.length(); ) {
            int cp = s.codePointAt(i);
            i += Character.charCount(cp);
            if (!in(cp, UNPRINTABLE)) {
                sb.appendCodePoint(cp);
            } else if (cp == '\t' || cp == '\n' || cp == '\r') {
                sb.append(cp == '\t' ? "\\t" : cp == '\n' ? "\\n" : "\\r");
            } else {
                sb.append(String.format(Locale.ROOT, cp < 0x100 ? "\\x%02x" : cp < 0x10000 ? "\\u%04x" : "\\U%08x", cp));
            }
        }
        return sb.toString();
    }

    /** What a label looks like, for comparing labels: NFKC, invisible code points removed, NFKC again. */
    public static String fold(String s) {
        String once = Normalizer.normalize(s, Normalizer.Form.NFKC);
        StringBuilder sb = new StringBuilder(once.length());
        once.codePoints().filter(cp -> !in(cp, INVISIBLE)).forEach(sb::appendCodePoint);
        return Normalizer.normalize(sb, Normalizer.Form.NFKC);
    }

    /** A code point as U+XXXX, the way error messages name it. */
    static String uPlus(int cp) {
        return String.format(Locale.ROOT, "U+%04X", cp);
    }

    /** Python's {@code str.isspace()} for one code point (bidi WS, B or S, or category Zs). */
    static boolean isSpace(int cp) {
        switch (cp) {
            case 0x09: case 0x0A: case 0x0B: case 0x0C: case 0x0D: case 0x1C: case 0x1D: case 0x1E: case 0x1F:
            case 0x20: case 0x85: case 0xA0: case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F:
            case 0x3000:
                return true;
            default:
                return cp >= 0x2000 && cp <= 0x200A;
        }
    }

    /** Python's {@code not s.strip()}: empty or whitespace only (Java's notion of whitespace differs). */
    static boolean isBlank(String s) {
        return s.codePoints().allMatch(Text::isSpace);
    }

    /** Python's {@code len(s)}: code points, not UTF-16 units. */
    static int length(String s) {
        return s.codePointCount(0, s.length());
    }

    // ------------------------------------------------------------------ values in messages

    /** A value from the file as the Python reader's {@code _show} prints it: reprlib, then escaped. */
    static String show(Object v) {
        return escape(repr(v, 2));
    }

    /** reprlib's repr with the reader's limits: strings 60, lists 6 items, maps 4 keys, 2 levels. */
    private static String repr(Object v, int level) {
        if (v instanceof String) {
            String s = (String) v;
            String r = reprString(slice(s, 0, 60));
            if (length(r) <= 60) {
                return r;
            }
            r = reprString(slice(s, 0, 28) + slice(s, length(s) - 29, Integer.MAX_VALUE));
            return slice(r, 0, 28) + "..." + slice(r, length(r) - 29, Integer.MAX_VALUE);
        } else if (v instanceof List || v instanceof Map) {
            boolean list = v instanceof List;
            int n = list ? ((List<?>) v).size() : ((Map<?, ?>) v).size();
            if (n == 0 || level <= 0) {
                return list ? (n == 0 ? "[]" : "[...]") : (n == 0 ? "{}" : "{...}");
            }
            StringBuilder sb = new StringBuilder(list ? "[" : "{");
            int i = 0;
            for (Object x : list ? (List<?>) v : new TreeMap<>((Map<?, ?>) v).entrySet()) {
                if (i == (list ? 6 : 4)) {
                    sb.append(", ...");
                    break;
                }
                sb.append(i++ == 0 ? "" : ", ");
                if (list) {
                    sb.append(repr(x, level - 1));
                } else {
                    Map.Entry<?, ?> e = (Map.Entry<?, ?>) x;
                    sb.append(repr(e.getKey(), level - 1)).append(": ").append(repr(e.getValue(), level - 1));
                }
            }
            return sb.append(list ? "]" : "}").toString();
        } else if (v instanceof Msgpack.Bin) {
            return reprBytes((Msgpack.Bin) v);
        } else if (v instanceof Double) {
            return pyFloat((Double) v);
        } else if (v instanceof Boolean) {
            return (Boolean) v ? "True" : "False";
        }
        return v == null ? "None" : v.toString();
    }

    /** Python's repr of a str: quotes, escapes, and \x/\\u/\U for what is not printable. */
    static String reprString(String s) {
        char quote = s.indexOf('\'') >= 0 && s.indexOf('"') < 0 ? '"' : '\'';
        StringBuilder sb = new StringBuilder().append(quote);
        for (int i = 0; i < s.length(); ) {
            int cp = s.codePointAt(i);
            i += Character.charCount(cp);
            if (cp == quote || cp == '\\') {
                sb.append('\\').appendCodePoint(cp);
            } else if (cp == '\t' || cp == '\n' || cp == '\r') {
                sb.append(cp == '\t' ? "\\t" : cp == '\n' ? "\\n" : "\\r");
            } else if (isPrintable(cp)) {
                sb.appendCodePoint(cp);
            } else {
                sb.append(String.format(Locale.ROOT, cp < 0x100 ? "\\x%02x" : cp < 0x10000 ? "\\u%04x" : "\\U%08x", cp));
            }
        }
        return sb.append(quote).toString();
    }

    /** Python's {@code str.isprintable} for one code point. */
    private static boolean isPrintable(int cp) {
        switch (Character.getType(cp)) {
            case Character.CONTROL: case Character.FORMAT: case Character.SURROGATE: case Character.PRIVATE_USE:
            case Character.UNASSIGNED: case Character.LINE_SEPARATOR: case Character.PARAGRAPH_SEPARATOR:
                return false;
            case Character.SPACE_SEPARATOR:
                return cp == ' ';
            default:
                return true;
        }
    }

    /** Python's {@code s[from:to]} in code points (a negative start counts from the end). */
    private static String slice(String s, int from, int to) {
        int n = length(s);
        int a = from < 0 ? Math.max(0, from + n) : Math.min(from, n);
        int b = Math.min(to, n);
        return a >= b ? "" : s.substring(s.offsetByCodePoints(0, a), s.offsetByCodePoints(0, b));
    }

    /** Python's repr of bytes, cut to 60 characters as reprlib does, without building it whole (a bin may be megabytes). */
    private static String reprBytes(Msgpack.Bin b) {
        boolean single = false;
        boolean dbl = false;
        for (int i = 0; i < b.length; i++) {
            single |= b.array[b.offset + i] == '\'';
            dbl |= b.array[b.offset + i] == '"';
        }
        char quote = single && !dbl ? '"' : '\'';
        long width = 3;  // b and two quotes, then each byte's escape
        for (int i = 0; i < b.length; i++) {
            int c = b.array[b.offset + i] & 0xff;
            width += c == quote || c == '\\' || c == '\t' || c == '\n' || c == '\r' ? 2 : c >= 0x20 && c < 0x7f ? 1 : 4;
        }
        if (width <= 60) {
            return "b" + quote + bytesBody(b, 0, b.length, quote) + quote;
        }
        String head = "b" + quote + bytesBody(b, 0, Math.min(b.length, 28), quote);
        String tail = bytesBody(b, Math.max(0, b.length - 29), b.length, quote) + quote;
        return head.substring(0, 28) + "..." + tail.substring(tail.length() - 29);
    }

    /** Python's repr of bytes, whole. */
    static String reprBytes(byte[] raw) {
        Msgpack.Bin b = new Msgpack.Bin(raw, 0, raw.length);
        boolean single = false;
        boolean dbl = false;
        for (byte x : raw) {
            single |= x == '\'';
            dbl |= x == '"';
        }
        char quote = single && !dbl ? '"' : '\'';
        return "b" + quote + bytesBody(b, 0, raw.length, quote) + quote;
    }

    private static String bytesBody(Msgpack.Bin b, int from, int to, char quote) {
        StringBuilder sb = new StringBuilder();
        for (int i = from; i < to; i++) {
            int c = b.array[b.offset + i] & 0xff;
            if (c == quote || c == '\\') {
                sb.append('\\').append((char) c);
            } else if (c == '\t' || c == '\n' || c == '\r') {
                sb.append(c == '\t' ? "\\t" : c == '\n' ? "\\n" : "\\r");
            } else if (c >= 0x20 && c < 0x7f) {
                sb.append((char) c);
            } else {
                sb.append(String.format(Locale.ROOT, "\\x%02x", c));
            }
        }
        return sb.toString();
    }

    /** A double as Python's repr prints it: "8.0", "1e-06", "inf", "nan". */
    static String pyFloat(double d) {
        if (Double.isNaN(d)) {
            return "nan";
        }
        if (Double.isInfinite(d)) {
            return d > 0 ? "inf" : "-inf";
        }
        if (d == 0) {
            return 1 / d < 0 ? "-0.0" : "0.0";
        }
        // The shortest digits that read back as d (Double.toString is not always shortest before
        // JDK 19), laid out as Python does: positional for 1e-4 <= |d| < 1e16.
        BigDecimal exact = new BigDecimal(Math.abs(d));
        BigDecimal bd = exact;
        for (int precision = 1; precision <= 17; precision++) {
            BigDecimal r = exact.round(new MathContext(precision, RoundingMode.HALF_EVEN));
            if (r.doubleValue() == Math.abs(d)) {
                bd = r;
                break;
            }
        }
        return (d < 0 ? "-" : "") + layout(bd.stripTrailingZeros(), 16, true);
    }

    /** Python's {@code format(x, ".Ng")}: N significant digits, trailing zeros dropped. */
    static String g(double x, int precision) {
        if (Double.isNaN(x) || Double.isInfinite(x)) {
            return pyFloat(x);
        }
        if (x == 0) {
            return 1 / x < 0 ? "-0" : "0";
        }
        BigDecimal bd = new BigDecimal(Math.abs(x)).round(new MathContext(precision, RoundingMode.HALF_EVEN));
        return (x < 0 ? "-" : "") + layout(bd.stripTrailingZeros(), precision, false);
    }

    /** Digits of {@code bd} positional when -4 <= exponent < {@code big}, else d.ddde+XX. */
    private static String layout(BigDecimal bd, int big, boolean pointZero) {
        String digits = bd.unscaledValue().toString();
        int exp = digits.length() - 1 - bd.scale();
        StringBuilder sb = new StringBuilder();
        if (exp < -4 || exp >= big) {
            sb.append(digits.charAt(0));
            if (digits.length() > 1) {
                sb.append('.').append(digits, 1, digits.length());
            }
            return sb.append(String.format(Locale.ROOT, "e%s%02d", exp < 0 ? "-" : "+", Math.abs(exp))).toString();
        }
        if (exp < 0) {
            return sb.append("0.").append("0".repeat(-exp - 1)).append(digits).toString();
        }
        if (digits.length() <= exp + 1) {
            return sb.append(digits).append("0".repeat(exp + 1 - digits.length())).append(pointZero ? ".0" : "").toString();
        }
        return sb.append(digits, 0, exp + 1).append('.').append(digits, exp + 1, digits.length()).toString();
    }

    /** A bound as the reader prints it: an integer when it is one (below 1e15), else {@code g(x, 6)}. */
    static String num(Double x) {
        if (x == null) {
            return "any";
        }
        return x == Math.rint(x) && Math.abs(x) < 1e15 ? BigDecimal.valueOf(x).toBigInteger().toString() : g(x, 6);
    }

    /** A number from the file (Long, BigInteger or Double) against a bound: -1 below, 1 above, exactly. */
    static int compare(Object integerOrDouble, double bound) {
        if (integerOrDouble instanceof Double) {  // as Python compares: -0.0 is not below 0
            double x = (Double) integerOrDouble;
            return x < bound ? -1 : x > bound ? 1 : 0;
        }
        BigInteger v = integerOrDouble instanceof BigInteger ? (BigInteger) integerOrDouble
                : BigInteger.valueOf((Long) integerOrDouble);
        return new BigDecimal(v).compareTo(new BigDecimal(bound));
    }
}
