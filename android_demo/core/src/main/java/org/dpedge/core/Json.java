package org.dpedge.core;

import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Strict JSON, as the contract reads a tokenizer.json (docs/bundle-format.md section 6) and its
 * own files: RFC 8259 with JSON white space only (no BOM), no key twice in one object, no NaN
 * or infinity literal, no integer written {@code -0} or beyond {@code maxInteger}, no string
 * holding a lone surrogate (from u-escapes), at most {@code maxDepth} nested
 * containers.
 *
 * <p>Values: {@link Map} (file order), {@link List}, {@link String}, {@link Long} (a number
 * without fraction or exponent), {@link Double} (any other number), {@link Boolean}, null.
 */
final class Json {
    /** The text is not strict JSON; the message says where. */
    static final class Invalid extends Exception {
        private static final long serialVersionUID = 1L;

        Invalid(String why) {
            super(why);
        }
    }

    private final String s;
    private final int maxDepth;
    private final BigInteger maxInteger;
    private int pos;

    private Json(String s, int maxDepth, long maxInteger) {
        this.s = s;
        this.maxDepth = maxDepth;
        this.maxInteger = BigInteger.valueOf(maxInteger);
    }

    static Object parse(String text, int maxDepth, long maxInteger) throws Invalid {
        Json p = new Json(text, maxDepth, maxInteger);
        p.space();
        Object v = p.value(0);
        p.space();
        if (p.pos != text.length()) {
            throw p.error("text after the document");
        }
        return v;
    }

    private Invalid error(String what) {
        return new Invalid(what + " at character " + pos);
    }

    private void space() {
        while (pos < s.length() && " \t\n\r".indexOf(s.charAt(pos)) >= 0) {
            pos++;
        }
    }

    private char peek() {
        return pos < s.length() ? s.charAt(pos) : '\0';
    }

    private char next() throws Invalid {
        if (pos >= s.length()) {
            throw error("the text ends inside a value");
        }
        return s.charAt(pos++);
    }

    private Object value(int depth) throws Invalid {
        char c = peek();
        if (c == '{' || c == '[') {
            if (depth + 1 > maxDepth) {
                throw error("containers nest deeper than " + maxDepth);
            }
            return c == '{' ? object(depth + 1) : array(depth + 1);
        }
        if (c == '"') {
            return string();
        }
        if (c == '-' || (c >= '0' && c <= '9')) {
            return number();
        }
        for (Object[] lit : new Object[][] {{"true", Boolean.TRUE}, {"false", Boolean.FALSE}, {"null", null}}) {
            if (s.startsWith((String) lit[0], pos)) {
                pos += ((String) lit[0]).length();
                return lit[1];
            }
        }
        throw error("no JSON value");
    }

    private Map<String, Object> object(int depth) throws Invalid {
        pos++;
        Map<String, Object> map = new LinkedHashMap<>();
        space();
        if (peek() == '}') {
            pos++;
            return Collections.unmodifiableMap(map);
        }
        while (true) {
            space();
            if (peek() != '"') {
                throw error("an object key that is not a string");
            }
            String key = string();
            space();
            if (next() != ':') {
                throw error("no ':' after an object key");
            }
            space();
            Object v = value(depth);
            if (map.containsKey(key)) {
                throw error("a key given twice in one object (parsers disagree on which counts)");
            }
            map.put(key, v);
            space();
            char c = next();
            if (c == '}') {
                return Collections.unmodifiableMap(map);
            }
            if (c != ',') {
                throw error("no ',' or '}' after an object entry");
            }
        }
    }

    private List<Object> array(int depth) throws Invalid {
        pos++;
        List<Object> list = new ArrayList<>();
        space();
        if (peek() == ']') {
            pos++;
            return Collections.unmodifiableList(list);
        }
        while (true) {
            space();
            list.add(value(depth));
            space();
            char c = next();
            if (c == ']') {
                return Collections.unmodifiableList(list);
            }
            if (c != ',') {
                throw error("no ',' or ']' after an array item");
            }
        }
    }

    private String string() throws Invalid {
        pos++;
        StringBuilder sb = new StringBuilder();
        while (true) {
            char c = next();
            if (c == '"') {
                break;
            } else if (c < 0x20) {
                throw error("a control character inside a string");
            } else if (c != '\\') {
                sb.append(c);
                continue;
            }
            char e = next();
            int i = "\"\\/bfnrt".indexOf(e);
            if (i >= 0) {
                sb.append("\"\\/\b\f\n\r\t".charAt(i));
            } else if (e == 'u' && pos + 4 <= s.length()) {
                int v = 0;
                for (int k = 0; k < 4; k++) {
                    char h = s.charAt(pos++);
                    int d = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10
                            : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
                    if (d < 0) {
                        throw error("a \\u escape that is not four hex digits");
                    }
                    v = v * 16 + d;
                }
                sb.append((char) v);
            } else {
                throw error("an invalid escape");
            }
        }
        String out = sb.toString();
        for (int i = 0; i < out.length(); i++) {  // escapes may pair up; a lone surrogate is refused
            char c = out.charAt(i);
            if (Character.isHighSurrogate(c) && i + 1 < out.length() && Character.isLowSurrogate(out.charAt(i + 1))) {
                i++;
            } else if (Character.isSurrogate(c)) {
                throw error("a string holding a lone surrogate");
            }
        }
        return out;
    }

    private Object number() throws Invalid {
        int start = pos;
        if (peek() == '-') {
            pos++;
        }
        if (peek() == '0') {
            pos++;
        } else if (peek() >= '1' && peek() <= '9') {
            digits();
        } else {
            throw error("a number without digits");
        }
        boolean integer = true;
        if (peek() == '.') {
            integer = false;
            pos++;
            if (!digits()) {
                throw error("no digit after a decimal point");
            }
        }
        if (peek() == 'e' || peek() == 'E') {
            integer = false;
            pos++;
            if (peek() == '+' || peek() == '-') {
                pos++;
            }
            if (!digits()) {
                throw error("no digit in an exponent");
            }
        }
        String text = s.substring(start, pos);
        if (!integer) {
            return Double.parseDouble(text);
        }
        if (text.equals("-0")) {
            throw error("the number -0 (an integer to some parsers, a float to others)");
        }
        BigInteger n = new BigInteger(text);
        if (n.abs().compareTo(maxInteger) > 0) {
            throw error("an integer beyond " + maxInteger);
        }
        return n.longValue();
    }

    private boolean digits() {
        int start = pos;
        while (peek() >= '0' && peek() <= '9') {
            pos++;
        }
        return pos > start;
    }
}
