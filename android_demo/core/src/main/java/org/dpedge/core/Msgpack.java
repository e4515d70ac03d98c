package org.dpedge.core;

import java.io.IOException;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.msgpack.core.ExtensionTypeHeader;
import org.msgpack.core.MessageFormat;
import org.msgpack.core.MessageInsufficientBufferException;
import org.msgpack.core.MessagePack;
import org.msgpack.core.MessagePackException;
import org.msgpack.core.MessageSizeException;
import org.msgpack.core.MessageUnpacker;

/**
 * Parses one msgpack document into plain Java values, with the Python reader's failure rules.
 *
 * <p>Why a tree and not streaming field access: the reference reader ({@code runtime/bundle.py})
 * parses the whole map and then validates fields in a fixed order, and its error messages
 * depend on that order. Building the same tree here lets {@link BundleReader} mirror the
 * checks one for one. Values are {@code null}, {@link Boolean}, {@link Long} (or
 * {@link BigInteger} above {@code Long.MAX_VALUE}), {@link Double}, {@link String},
 * {@link Bin}, {@link List}, {@link Map} with string keys, and {@link Timestamp}.
 *
 * <p>Binary values are {@link Bin} views into the input array, not copies: a bundle is
 * mostly its 22 MB encoder, and each extra copy costs that much peak memory on a phone.
 *
 * <p>Python parity (msgpack-python 1.x {@code unpackb} as called by the reference):
 * an array header larger than the input, or a map header larger than half of it, is "not
 * valid msgpack" (Python's {@code max_array_len}/{@code max_map_len}); a string, binary or
 * extension longer than what is left is "truncated"; more than 1024 nested containers is
 * invalid (Python's parser stack); map keys must be strings (binary keys are accepted by
 * Python but can never name a field, so they are dropped here); strings must be valid UTF-8;
 * extension type -1 is a msgpack timestamp (Python decodes it instead of calling the
 * extension hook) and every other extension type is refused.
 */
final class Msgpack {
    /** Longest string anywhere in a bundle, in bytes (Python's schema.MAX_STRING_BYTES). */
    static final int MAX_STRING_BYTES = 16 * 1024 * 1024;
    /** Containers nested deeper than this are refused, like msgpack-python's parser stack. */
    static final int MAX_DEPTH = 1024;

    private final byte[] data;
    private final int offset;
    private final int length;
    private final MessageUnpacker unpacker;
    private final String what;

    private Msgpack(byte[] data, int offset, int length, String what) {
        this.data = data;
        this.offset = offset;
        this.length = length;
        this.what = what;
        this.unpacker = MessagePack.newDefaultUnpacker(data, offset, length);
    }

    /** A binary value: a view of {@code length} bytes of {@code array} from {@code offset}. */
    static final class Bin {
        final byte[] array;
        final int offset;
        final int length;

        Bin(byte[] array, int offset, int length) {
            this.array = array;
            this.offset = offset;
            this.length = length;
        }

        byte[] copy() {
            byte[] out = new byte[length];
            System.arraycopy(array, offset, out, 0, length);
            return out;
        }

        ByteBuffer buffer() {
            return ByteBuffer.wrap(array, offset, length).slice();
        }
    }

    /** A msgpack timestamp (extension -1); kept only so it is named like Python names it. */
    static final class Timestamp {
        @Override
        public String toString() {
            return "Timestamp(...)";
        }
    }

    /**
     * Parses exactly one msgpack map from {@code data[offset, offset+length)}.
     *
     * @param what how messages name the document ("bundle", "bundle payload")
     */
    @SuppressWarnings("unchecked")
    static Map<String, Object> parseMap(byte[] data, int offset, int length, String what) throws BundleException {
        Msgpack p = new Msgpack(data, offset, length, what);
        Object obj;
        long consumed;
        try {
            obj = p.document();
            consumed = p.unpacker.getTotalReadBytes();
        } catch (MessageInsufficientBufferException e) {
            throw p.truncated();
        } catch (MessagePackException | IOException e) {
            throw p.invalid(e.getClass().getSimpleName() + ": " + e.getMessage());
        }
        if (!(obj instanceof Map)) {
            throw new BundleException(what + " is not a dpedge bundle: top level is " + typeName(obj)
                    + ", expected a map");
        }
        if (consumed < length) {
            throw new BundleException(what + " has " + (length - consumed) + " unexpected trailing bytes");
        }
        return (Map<String, Object>) obj;
    }

    private BundleException truncated() {
        return new BundleException(what + " is truncated (" + length + " bytes): the file was cut short");
    }

    private BundleException invalid(String detail) {
        return new BundleException(what + " is not valid msgpack (" + detail + ")");
    }

    private long remaining() {
        return length - unpacker.getTotalReadBytes();
    }

    /** Refuses a declared byte length before anything of that size is read or allocated. */
    private void need(long n) throws BundleException {
        if (n > remaining()) {
            throw truncated();
        }
    }

    /** A string, binary or extension length; one over 2^31 cannot fit in what is left. */
    private int sizeHeader(MessageFormat f) throws IOException, BundleException {
        try {
            return f.getValueType() == org.msgpack.value.ValueType.STRING
                    ? unpacker.unpackRawStringHeader() : unpacker.unpackBinaryHeader();
        } catch (MessageSizeException e) {
            throw truncated();
        }
    }

    private String utf8(int n) throws IOException, BundleException {
        byte[] bytes = unpacker.readPayload(n);
        CharsetDecoder dec = StandardCharsets.UTF_8.newDecoder()
                .onMalformedInput(CodingErrorAction.REPORT)
                .onUnmappableCharacter(CodingErrorAction.REPORT);
        try {
            return dec.decode(ByteBuffer.wrap(bytes)).toString();
        } catch (CharacterCodingException e) {
            throw invalid("UnicodeDecodeError: a string is not valid UTF-8");
        }
    }

    /**
     * An array or map whose elements are being read. The parser keeps these on an explicit
     * stack instead of recursing, so 1024 levels of nesting cannot overflow a thread's stack
     * (Android's worker threads have small ones).
     */
    private static final class Container {
        final List<Object> list;
        final Map<String, Object> map;
        long left;  // elements (array) or keys and values (map) still to read
        Object key;

        Container(long count, long capacity, boolean isMap) {
            list = isMap ? null : new ArrayList<>((int) Math.min(count, capacity));
            map = isMap ? new LinkedHashMap<>() : null;
            left = isMap ? 2 * count : count;
        }

        /** Adds the next element (for a map, a key or a value). */
        void add(Object v, Msgpack p) throws BundleException {
            left--;
            if (list != null) {
                list.add(v);
            } else if (left % 2 == 1) {
                key = v;
            } else if (key instanceof String) {
                map.put((String) key, v);  // a repeated key: the last one wins, as in Python
            } else if (!(key instanceof Bin)) {
                throw p.invalid("ValueError: " + typeName(key) + " is not allowed for map key (keys must be strings)");
            }
        }

        Object value() {
            return list != null ? Collections.unmodifiableList(list) : Collections.unmodifiableMap(map);
        }
    }

    /** One whole msgpack value, containers included. */
    private Object document() throws IOException, BundleException {
        ArrayDeque<Container> open = new ArrayDeque<>();
        while (true) {
            Object v = next(open.size());
            while (true) {
                if (v instanceof Container) {
                    Container c = (Container) v;
                    if (c.left > 0) {
                        open.push(c);
                        break;  // read its elements next
                    }
                    v = c.value();
                }
                if (open.isEmpty()) {
                    return v;
                }
                Container top = open.peek();
                top.add(v, this);
                if (top.left > 0) {
                    break;
                }
                open.pop();
                v = top.value();
            }
        }
    }

    /** The next scalar value, or a new {@link Container} for an array or map header. */
    private Object next(int openContainers) throws IOException, BundleException {
        if (!unpacker.hasNext()) {
            throw truncated();
        }
        MessageFormat f = unpacker.getNextFormat();
        if (f == MessageFormat.NEVER_USED) {
            throw invalid("FormatError: reserved byte 0xc1");
        }
        switch (f.getValueType()) {
            case NIL:
                unpacker.unpackNil();
                return null;
            case BOOLEAN:
                return unpacker.unpackBoolean();
            case INTEGER:
                if (f == MessageFormat.UINT64) {
                    BigInteger big = unpacker.unpackBigInteger();
                    return big.bitLength() < 64 ? (Object) big.longValue() : big;
                }
                return unpacker.unpackLong();
            case FLOAT:
                return unpacker.unpackDouble();
            case STRING: {
                int n = sizeHeader(f);
                if (n > MAX_STRING_BYTES) {  // before the bytes: a declared length decides
                    throw new BundleException(what + " holds a string of " + n + " bytes, longer than any field allows ("
                            + MAX_STRING_BYTES + ")");
                }
                need(n);
                return utf8(n);
            }
            case BINARY: {
                int n = sizeHeader(f);
                need(n);
                int start = offset + (int) unpacker.getTotalReadBytes();
                unpacker.readPayloadAsReference(n);  // advances without copying
                return new Bin(data, start, n);
            }
            case ARRAY:
            case MAP:
                return container(f.getValueType() == org.msgpack.value.ValueType.MAP, openContainers);
            case EXTENSION:
                return extension(f);
            default:
                throw invalid("unknown format " + f);
        }
    }

    /** Reads an array or map header, with msgpack-python's stack and length limits. */
    private Container container(boolean isMap, int openContainers) throws IOException, BundleException {
        long n;
        try {
            n = isMap ? unpacker.unpackMapHeader() : unpacker.unpackArrayHeader();
        } catch (MessageSizeException e) {
            n = e.getSize();
        }
        if (openContainers >= MAX_DEPTH) {
            throw invalid("StackError: containers nested more than " + MAX_DEPTH + " deep");
        }
        long max = isMap ? length / 2 : length;
        if (n > max) {
            throw invalid("ValueError: " + n + " exceeds max_" + (isMap ? "map" : "array") + "_len(" + max + ")");
        }
        // Each element takes at least one byte, so the list's capacity is bounded by the input.
        return new Container(n, Math.max(0, remaining()), isMap);
    }

    private Object extension(MessageFormat f) throws IOException, BundleException {
        ExtensionTypeHeader h;
        try {
            h = unpacker.unpackExtensionTypeHeader();
        } catch (MessageSizeException e) {
            throw truncated();
        }
        need(h.getLength());
        int start = offset + (int) unpacker.getTotalReadBytes();
        unpacker.readPayloadAsReference(h.getLength());
        if (h.getType() == -1) {
            int len = h.getLength();
            if (len != 4 && len != 8 && len != 12) {
                throw invalid("ValueError: invalid timestamp data (length " + len + ")");
            }
            if (len > 4) {  // 8 bytes: nanoseconds in the top 30 bits; 12 bytes: in the first 4 bytes
                long first = ((data[start] & 0xffL) << 24) | ((data[start + 1] & 0xff) << 16)
                        | ((data[start + 2] & 0xff) << 8) | (data[start + 3] & 0xff);
                long nanos = len == 8 ? first >>> 2 : first;
                if (nanos > 999_999_999L) {
                    throw invalid("ValueError: nanoseconds must be a non-negative integer not greater than 999999999.");
                }
            }
            return new Timestamp();
        }
        throw new BundleException("unexpected msgpack extension type " + h.getType());
    }

    // ------------------------------------------------------------------ naming and printing

    /** The msgpack name of a parsed value's type, as the Python reader prints it. */
    static String typeName(Object v) {
        if (v == null) {
            return "nil";
        } else if (v instanceof Boolean) {
            return "boolean";
        } else if (v instanceof Long || v instanceof BigInteger || v instanceof Integer) {
            return "integer";
        } else if (v instanceof Double || v instanceof Float) {
            return "float";
        } else if (v instanceof String) {
            return "string";
        } else if (v instanceof Bin || v instanceof byte[]) {
            return "bin";
        } else if (v instanceof List) {
            return "array";
        } else if (v instanceof Map) {
            return "map";
        } else if (v instanceof Timestamp) {
            return "Timestamp";
        }
        return v.getClass().getSimpleName();
    }

    /** Roughly Python's {@code repr} of a parsed value, for error messages. */
    static String repr(Object v) {
        if (v == null) {
            return "None";
        } else if (v instanceof Boolean) {
            return ((Boolean) v) ? "True" : "False";
        } else if (v instanceof Double) {
            return pyFloat((Double) v);
        } else if (v instanceof String) {
            return reprString((String) v);
        } else if (v instanceof Bin) {
            return reprBytes((Bin) v);
        } else if (v instanceof List) {
            StringBuilder sb = new StringBuilder("[");
            List<?> list = (List<?>) v;
            for (int i = 0; i < list.size(); i++) {
                sb.append(i == 0 ? "" : ", ").append(repr(list.get(i)));
            }
            return sb.append(']').toString();
        } else if (v instanceof Map) {
            StringBuilder sb = new StringBuilder("{");
            boolean first = true;
            for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
                sb.append(first ? "" : ", ").append(repr(e.getKey())).append(": ").append(repr(e.getValue()));
                first = false;
            }
            return sb.append('}').toString();
        }
        return String.valueOf(v);
    }

    /** Python's repr of a str: quotes, escapes and \\x/\\u/\\U for what is not printable. */
    static String reprString(String s) {
        char quote = s.indexOf('\'') >= 0 && s.indexOf('"') < 0 ? '"' : '\'';
        StringBuilder sb = new StringBuilder().append(quote);
        for (int i = 0; i < s.length(); ) {
            int cp = s.codePointAt(i);
            i += Character.charCount(cp);
            if (cp == quote || cp == '\\') {
                sb.append('\\').appendCodePoint(cp);
            } else if (cp == '\t') {
                sb.append("\\t");
            } else if (cp == '\n') {
                sb.append("\\n");
            } else if (cp == '\r') {
                sb.append("\\r");
            } else if (isPrintable(cp)) {
                sb.appendCodePoint(cp);
            } else if (cp < 0x100) {
                sb.append(String.format(java.util.Locale.ROOT, "\\x%02x", cp));
            } else if (cp < 0x10000) {
                sb.append(String.format(java.util.Locale.ROOT, "\\u%04x", cp));
            } else {
                sb.append(String.format(java.util.Locale.ROOT, "\\U%08x", cp));
            }
        }
        return sb.append(quote).toString();
    }

    /** Python's {@code str.isprintable} for one code point. */
    static boolean isPrintable(int cp) {
        if (cp == ' ') {
            return true;
        }
        switch (Character.getType(cp)) {
            case Character.CONTROL:
            case Character.FORMAT:
            case Character.SURROGATE:
            case Character.PRIVATE_USE:
            case Character.UNASSIGNED:
            case Character.LINE_SEPARATOR:
            case Character.PARAGRAPH_SEPARATOR:
            case Character.SPACE_SEPARATOR:
                return false;
            default:
                return true;
        }
    }

    /** Python's repr of bytes, cut after 100 bytes (a bundle's bin fields can be megabytes). */
    static String reprBytes(Bin b) {
        int n = Math.min(b.length, 100);
        boolean single = false;
        boolean dbl = false;
        for (int i = 0; i < n; i++) {
            single |= b.array[b.offset + i] == '\'';
            dbl |= b.array[b.offset + i] == '"';
        }
        char quote = single && !dbl ? '"' : '\'';
        StringBuilder sb = new StringBuilder("b").append(quote);
        for (int i = 0; i < n; i++) {
            int c = b.array[b.offset + i] & 0xff;
            if (c == quote || c == '\\') {
                sb.append('\\').append((char) c);
            } else if (c == '\t') {
                sb.append("\\t");
            } else if (c == '\n') {
                sb.append("\\n");
            } else if (c == '\r') {
                sb.append("\\r");
            } else if (c >= 0x20 && c < 0x7f) {
                sb.append((char) c);
            } else {
                sb.append(String.format(java.util.Locale.ROOT, "\\x%02x", c));
            }
        }
        sb.append(quote);
        return b.length > n ? sb + "... (" + b.length + " bytes)" : sb.toString();
    }

    /** A double the way Python prints it: "8.0", "1e-06", "inf", "nan". */
    static String pyFloat(double d) {
        if (Double.isNaN(d)) {
            return "nan";
        }
        if (Double.isInfinite(d)) {
            return d > 0 ? "inf" : "-inf";
        }
        if (d == 0) {
            return (1 / d < 0) ? "-0.0" : "0.0";
        }
        // Shortest round-trip digits and decimal exponent, then Python's layout rule:
        // positional for 1e-4 <= |d| < 1e16, scientific otherwise.
        // (Double.toString is not always shortest before JDK 19, so round the exact value instead.)
        java.math.BigDecimal exact = new java.math.BigDecimal(Math.abs(d));
        java.math.BigDecimal bd = exact;
        for (int precision = 1; precision <= 17; precision++) {
            java.math.BigDecimal r =
                    exact.round(new java.math.MathContext(precision, java.math.RoundingMode.HALF_EVEN));
            if (r.doubleValue() == Math.abs(d)) {
                bd = r;
                break;
            }
        }
        bd = bd.stripTrailingZeros();
        String digits = bd.unscaledValue().toString();
        int exp = digits.length() - 1 - bd.scale();  // d = digits[0].digits[1:] x 10^exp
        StringBuilder sb = new StringBuilder(d < 0 ? "-" : "");
        if (exp < -4 || exp >= 16) {
            sb.append(digits.charAt(0));
            if (digits.length() > 1) {
                sb.append('.').append(digits, 1, digits.length());
            }
            sb.append('e').append(exp < 0 ? '-' : '+');
            int a = Math.abs(exp);
            sb.append(a < 10 ? "0" : "").append(a);
        } else if (exp < 0) {
            sb.append("0.");
            for (int i = -1; i > exp; i--) {
                sb.append('0');
            }
            sb.append(digits);
        } else if (digits.length() <= exp + 1) {
            sb.append(digits);
            for (int i = digits.length(); i <= exp; i++) {
                sb.append('0');
            }
            sb.append(".0");
        } else {
            sb.append(digits, 0, exp + 1).append('.').append(digits, exp + 1, digits.length());
        }
        return sb.toString();
    }
}
