package org.dpedge.core;

import java.io.IOException;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
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
import org.msgpack.core.MessageUnpacker;
import org.msgpack.value.ValueType;

/**
 * One msgpack document as plain Java values, held to the container rules of format 1.0
 * ({@code docs/bundle-format.md} section 1) with the Python reader's messages.
 *
 * <p>Values are {@code null}, {@link Boolean}, {@link Long} (a {@link BigInteger} above
 * {@code Long.MAX_VALUE}), {@link Double} (msgpack float32 and float64: a float, never an
 * integer), {@link String}, {@link Bin}, {@link List} and {@link Map} with string keys, in file
 * order. Refused: a map that repeats a key or has a key that is not a string, any extension
 * type, containers nested deeper than {@link #MAX_DEPTH}, a container of more than
 * {@link #MAX_CONTAINER} entries, more entries in all than the value budget, strings that are
 * not UTF-8, bytes after the document. A declared length is checked against the bytes left
 * before anything is allocated for it, and binary values are views of the input (a bundle is
 * mostly its 23 MB encoder). When a file breaks several rules, the one refused is the one the
 * Python reader refuses, but for the depth (see {@link #container}).
 */
final class Msgpack {
    static final int MAX_DEPTH = 32;
    static final int MAX_CONTAINER = 100_000;
    /** The value budget: a file of n bytes holds at most n / 64 + 4096 entries (a container counts its length plus one). */
    static final int BYTES_PER_VALUE = 64;
    static final int VALUE_ALLOWANCE = 4096;

    private final byte[] data;
    private final int offset;
    private final int length;
    private final MessageUnpacker in;
    private long budget;
    /** The reader's phrase for any extension type (Python: runtime/bundle/reader.py). */
    static final String EXTENSION = "not a dpedge bundle: it holds a msgpack extension type, which no field may";

    private Msgpack(byte[] data, int offset, int length, long budget) {
        this.data = data;
        this.offset = offset;
        this.length = length;
        this.in = MessagePack.newDefaultUnpacker(data, offset, length);
        this.budget = budget;
    }

    /** A binary value: {@code length} bytes of {@code array} from {@code offset}, not copied. */
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

    /** The one document in {@code data[offset, offset + length)}, its budget the file's size. */
    static Object parse(byte[] data, int offset, int length) throws BundleException {
        Msgpack p = new Msgpack(data, offset, length, (long) length / BYTES_PER_VALUE + VALUE_ALLOWANCE);
        Object doc;
        try {
            doc = p.value(1);
            if (p.in.hasNext()) {
                throw invalid("ExtraData: bytes after the document");
            }
        } catch (MessageInsufficientBufferException e) {
            throw invalid("ValueError: Unpack failed: incomplete input");
        } catch (MessagePackException | IOException e) {
            throw invalid(e.getClass().getSimpleName() + ": " + e.getMessage());
        }
        return doc;
    }

    /**
     * The first {@code n} values after the top map's header, read as the Python reader reads a
     * file that is not sealed: strings up to 64 bytes, no binary data, arrays of 4 and maps of
     * 1 at most; null when they cannot be read so.
     */
    static List<Object> head(byte[] data, int n) {
        try {
            Msgpack p = new Msgpack(data, 0, Math.min(data.length, 4096), Long.MAX_VALUE);
            if (p.in.getNextFormat().getValueType() != ValueType.MAP) {
                return null;
            }
            p.in.unpackMapHeader();
            List<Object> out = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                out.add(p.small(1));
            }
            return out;
        } catch (BundleException | MessagePackException | IOException e) {
            return null;
        }
    }

    private Object small(int depth) throws IOException, BundleException {
        MessageFormat f = in.getNextFormat();
        ValueType t = f == MessageFormat.NEVER_USED ? ValueType.NIL : f.getValueType();
        long n;
        switch (t) {
            case STRING:
                n = in.unpackRawStringHeader();
                if (n > 64) {
                    throw invalid("a string of " + n + " bytes");
                }
                return utf8((int) n);
            case BINARY:
                if (in.unpackBinaryHeader() > 0) {
                    throw invalid("binary data");
                }
                return new Bin(data, 0, 0);
            case EXTENSION:
                in.skipValue();
                return new Object();  // never equal to what the caller looks for
            case ARRAY:
            case MAP:
                n = t == ValueType.ARRAY ? in.unpackArrayHeader() : in.unpackMapHeader();
                if (n > (t == ValueType.ARRAY ? 4 : 1) || depth > MAX_DEPTH) {
                    throw invalid("a container of " + n);
                }
                List<Object> items = new ArrayList<>();
                for (long i = 0; i < (t == ValueType.ARRAY ? n : 2 * n); i++) {
                    items.add(small(depth + 1));
                }
                return items;
            default:
                return value(depth);
        }
    }

    static BundleException invalid(String detail) {
        return new BundleException("not valid msgpack (" + detail + ")");
    }

    /** Refuses a declared byte length before anything of that size is read or allocated. */
    private int need(int n) throws BundleException {
        if (n > length - in.getTotalReadBytes()) {
            throw invalid("ValueError: Unpack failed: incomplete input");
        }
        return n;
    }

    private Object value(int depth) throws IOException, BundleException {
        MessageFormat f = in.getNextFormat();
        if (f == MessageFormat.NEVER_USED) {
            throw invalid("FormatError: reserved byte 0xc1");
        }
        switch (f.getValueType()) {
            case NIL:
                in.unpackNil();
                return null;
            case BOOLEAN:
                return in.unpackBoolean();
            case INTEGER:
                if (f == MessageFormat.UINT64) {
                    BigInteger big = in.unpackBigInteger();
                    return big.bitLength() < 64 ? (Object) big.longValue() : big;
                }
                return in.unpackLong();
            case FLOAT:
                return in.unpackDouble();
            case STRING:
                return utf8(need(in.unpackRawStringHeader()));
            case BINARY: {
                int n = need(in.unpackBinaryHeader());
                int start = offset + (int) in.getTotalReadBytes();
                in.readPayloadAsReference(n);  // advances without copying
                return new Bin(data, start, n);
            }
            case ARRAY:
            case MAP:
                return container(f.getValueType() == ValueType.MAP, depth);
            case EXTENSION:
                throw extension();
            default:
                throw invalid("FormatError: unknown format " + f);
        }
    }

    private String utf8(int n) throws IOException, BundleException {
        byte[] bytes = in.readPayload(n);
        try {
            return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(bytes)).toString();
        } catch (CharacterCodingException e) {
            throw invalid("UnicodeDecodeError: a string is not valid UTF-8");
        }
    }

    /**
     * An array or map, checked in msgpack-python's order (the reference reads with it): its
     * length at the header; a key that is neither str nor bin once its pair is read; the value
     * budget, a bin key and a repeated key once the container is complete (the reader's hooks).
     * Only the depth is checked earlier than Python checks it, at the header, so that the parser
     * never recurses past 33 levels (an Android thread's stack is small).
     * Memory stays bounded all along: a container holds at most MAX_CONTAINER entries, its list
     * never more slots than bytes are left, and the completed ones at most the budget.
     */
    private Object container(boolean isMap, int depth) throws IOException, BundleException {
        long n = isMap ? in.unpackMapHeader() : in.unpackArrayHeader();
        if (n > MAX_CONTAINER) {
            throw invalid("ValueError: " + n + " exceeds max_" + (isMap ? "map" : "array") + "_len(" + MAX_CONTAINER + ")");
        }
        if (depth > MAX_DEPTH) {  // at once, so that parsing never recurses deeper (Python checks after the parse)
            throw new BundleException("not a dpedge bundle: containers nest deeper than " + MAX_DEPTH);
        }
        Object out;
        String problem = null;
        if (!isMap) {
            List<Object> list = new ArrayList<>((int) Math.min(n, length - in.getTotalReadBytes()));
            for (long i = 0; i < n; i++) {
                list.add(value(depth + 1));
            }
            out = Collections.unmodifiableList(list);
        } else {
            Map<String, Object> map = new LinkedHashMap<>();
            for (long i = 0; i < n; i++) {
                Object key = value(depth + 1);
                Object v = value(depth + 1);
                if (!(key instanceof String) && !(key instanceof Bin)) {
                    throw invalid("ValueError: " + pythonType(key) + " is not allowed for map key when strict_map_key=True");
                }
                if (problem != null) {
                    continue;
                }
                if (key instanceof Bin) {
                    problem = "a map has a key that is not a string: " + Text.show(key);
                } else if (map.containsKey(key)) {
                    problem = "a map repeats the key " + Text.show(key);
                } else {
                    map.put((String) key, v);
                }
            }
            out = Collections.unmodifiableMap(map);
        }
        budget -= n + 1;
        if (budget < 0) {
            throw new BundleException("not a dpedge bundle: it holds more msgpack values than " + length + " bytes may");
        }
        if (problem != null) {
            throw new BundleException(problem);
        }
        return out;
    }

    /** Any extension, the timestamp (type -1) included: no field holds one. */
    private BundleException extension() throws IOException {
        in.unpackExtensionTypeHeader();
        return new BundleException(EXTENSION);
    }

    private static String pythonType(Object v) {
        return v == null ? "NoneType" : v instanceof Boolean ? "bool" : v instanceof Double ? "float"
                : v instanceof List ? "list" : v instanceof Map ? "dict" : "int";
    }

    /** The msgpack name of a parsed value's type, as the Python reader prints it. */
    static String kind(Object v) {
        if (v == null) {
            return "nil";
        } else if (v instanceof Boolean) {
            return "boolean";
        } else if (v instanceof Long || v instanceof BigInteger) {
            return "integer";
        } else if (v instanceof Double) {
            return "float";
        } else if (v instanceof String) {
            return "string";
        } else if (v instanceof Bin) {
            return "bin";
        }
        return v instanceof List ? "array" : "map";
    }
}
