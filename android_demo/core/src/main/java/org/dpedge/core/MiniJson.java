package org.dpedge.core;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A minimal, strict JSON parser (RFC 8259) for the bundle's {@code tokenizer.json}.
 *
 * <p>Why hand-written: the JDK has no JSON parser, Android's {@code org.json} does not exist on
 * a plain JVM (where the conformance tests run), and the library's only allowed dependency is
 * msgpack-core. A tokenizer.json is trusted-format but untrusted-content data, so this parser
 * is strict: no trailing commas, comments, leading zeros, raw control characters in strings
 * or unpaired surrogate escapes (the Rust {@code serde_json} that Python's {@code tokenizers}
 * uses rejects them too), and nesting is limited so a crafted file cannot overflow the stack.
 *
 * <p>Values: {@link Map} (insertion order; a repeated key is refused, {@link DuplicateKey}), {@link List},
 * {@link String}, {@link Long} for integers that fit, {@link Double} for other numbers,
 * {@link Boolean} and {@code null}. Errors are {@link IllegalArgumentException}s naming the
 * offset.
 */
final class MiniJson {
    /** serde_json's default recursion limit. */
    static final int MAX_DEPTH = 128;

    private final String s;
    private int pos;

    private MiniJson(String s) {
        this.s = s;
    }

    /** A key repeated in one object: refused, with the key named. */
    static final class DuplicateKey extends IllegalArgumentException {
        private static final long serialVersionUID = 1L;
        final String key;

        DuplicateKey(String key) {
            super("key " + key + " appears twice in one object");
            this.key = key;
        }
    }

    /** Parses one JSON document (surrounding whitespace allowed, nothing else). */
    static Object parse(String text) {
        MiniJson p = new MiniJson(text);
        p.skipWhitespace();
        Object v = p.value(0);
        p.skipWhitespace();
        if (p.pos != text.length()) {
            throw p.error("trailing characters");
        }
        return v;
    }

    private IllegalArgumentException error(String what) {
        return new IllegalArgumentException("invalid JSON at offset " + pos + ": " + what);
    }

    private void skipWhitespace() {
        while (pos < s.length()) {
            char c = s.charAt(pos);
            if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
                return;
            }
            pos++;
        }
    }

    private Object value(int depth) {
        if (pos >= s.length()) {
            throw error("unexpected end of input");
        }
        char c = s.charAt(pos);
        switch (c) {
            case '{':
                return object(depth + 1);
            case '[':
                return array(depth + 1);
            case '"':
                return string();
            case 't':
                return literal("true", Boolean.TRUE);
            case 'f':
                return literal("false", Boolean.FALSE);
            case 'n':
                return literal("null", null);
            default:
                if (c == '-' || (c >= '0' && c <= '9')) {
                    return number();
                }
                throw error("unexpected character '" + c + "'");
        }
    }

    private Object literal(String word, Object v) {
        if (!s.startsWith(word, pos)) {
            throw error("expected " + word);
        }
        pos += word.length();
        return v;
    }

    private Map<String, Object> object(int depth) {
        if (depth > MAX_DEPTH) {
            throw error("nested more than " + MAX_DEPTH + " deep");
        }
        pos++;  // '{'
        Map<String, Object> map = new LinkedHashMap<>();
        skipWhitespace();
        if (peek() == '}') {
            pos++;
            return Collections.unmodifiableMap(map);
        }
        while (true) {
            skipWhitespace();
            if (peek() != '"') {
                throw error("expected a string key");
            }
            String key = string();
            skipWhitespace();
            expect(':');
            skipWhitespace();
            Object v = value(depth);
            if (map.containsKey(key)) {
                // serde (the Rust side of tokenizers) refuses a repeated field, Python's json keeps
                // the last: a document two parsers would read differently is refused (the
                // tokenizer family check, TokenizerFamily).
                throw new DuplicateKey(key);
            }
            map.put(key, v);
            skipWhitespace();
            char c = next();
            if (c == '}') {
                return Collections.unmodifiableMap(map);
            }
            if (c != ',') {
                pos--;
                throw error("expected ',' or '}'");
            }
        }
    }

    private List<Object> array(int depth) {
        if (depth > MAX_DEPTH) {
            throw error("nested more than " + MAX_DEPTH + " deep");
        }
        pos++;  // '['
        List<Object> list = new ArrayList<>();
        skipWhitespace();
        if (peek() == ']') {
            pos++;
            return Collections.unmodifiableList(list);
        }
        while (true) {
            skipWhitespace();
            list.add(value(depth));
            skipWhitespace();
            char c = next();
            if (c == ']') {
                return Collections.unmodifiableList(list);
            }
            if (c != ',') {
                pos--;
                throw error("expected ',' or ']'");
            }
        }
    }

    private String string() {
        pos++;  // opening quote
        StringBuilder sb = new StringBuilder();
        while (true) {
            if (pos >= s.length()) {
                throw error("unterminated string");
            }
            char c = s.charAt(pos++);
            if (c == '"') {
                return sb.toString();
            } else if (c < 0x20) {
                pos--;
                throw error("control character in a string");
            } else if (c != '\\') {
                sb.append(c);
                continue;
            }
            char e = next();
            switch (e) {
                case '"': sb.append('"'); break;
                case '\\': sb.append('\\'); break;
                case '/': sb.append('/'); break;
                case 'b': sb.append('\b'); break;
                case 'f': sb.append('\f'); break;
                case 'n': sb.append('\n'); break;
                case 'r': sb.append('\r'); break;
                case 't': sb.append('\t'); break;
                case 'u': {
                    char u = hex4();
                    if (Character.isHighSurrogate(u)) {
                        // A high surrogate must be followed by an escaped low surrogate.
                        if (!s.startsWith("\\u", pos)) {
                            throw error("unpaired surrogate in a \\u escape");
                        }
                        pos += 2;
                        char low = hex4();
                        if (!Character.isLowSurrogate(low)) {
                            throw error("unpaired surrogate in a \\u escape");
                        }
                        sb.append(u).append(low);
                    } else if (Character.isLowSurrogate(u)) {
                        throw error("unpaired surrogate in a \\u escape");
                    } else {
                        sb.append(u);
                    }
                    break;
                }
                default:
                    pos--;
                    throw error("invalid escape '\\" + e + "'");
            }
        }
    }

    private char hex4() {
        if (pos + 4 > s.length()) {
            throw error("truncated \\u escape");
        }
        int v = 0;
        for (int i = 0; i < 4; i++) {
            char c = s.charAt(pos);
            int d = c >= '0' && c <= '9' ? c - '0'
                    : c >= 'a' && c <= 'f' ? c - 'a' + 10
                    : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
            if (d < 0) {
                throw error("invalid hex digit in a \\u escape");
            }
            v = v * 16 + d;
            pos++;
        }
        return (char) v;
    }

    private Object number() {
        int start = pos;
        boolean integral = true;
        if (peek() == '-') {
            pos++;
        }
        if (peek() == '0') {
            pos++;
        } else if (isDigit(peek())) {
            while (isDigit(peek())) {
                pos++;
            }
        } else {
            throw error("expected a digit");
        }
        if (peek() == '.') {
            integral = false;
            pos++;
            if (!isDigit(peek())) {
                throw error("expected a digit after '.'");
            }
            while (isDigit(peek())) {
                pos++;
            }
        }
        if (peek() == 'e' || peek() == 'E') {
            integral = false;
            pos++;
            if (peek() == '+' || peek() == '-') {
                pos++;
            }
            if (!isDigit(peek())) {
                throw error("expected a digit in the exponent");
            }
            while (isDigit(peek())) {
                pos++;
            }
        }
        String text = s.substring(start, pos);
        if (integral) {
            try {
                return Long.parseLong(text);
            } catch (NumberFormatException tooBig) {
                // falls through to a double, like a JSON number outside the 64-bit range
            }
        }
        return Double.parseDouble(text);
    }

    private static boolean isDigit(char c) {
        return c >= '0' && c <= '9';
    }

    /** The next character, or 0 at the end (0 never starts a valid token). */
    private char peek() {
        return pos < s.length() ? s.charAt(pos) : 0;
    }

    private char next() {
        if (pos >= s.length()) {
            throw error("unexpected end of input");
        }
        return s.charAt(pos++);
    }

    private void expect(char c) {
        if (next() != c) {
            pos--;
            throw error("expected '" + c + "'");
        }
    }
}
