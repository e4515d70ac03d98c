package org.dpedge.core;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Deque;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The container (docs/bundle-format.md section 1) of a bundle or an encoder pack: one msgpack
 * map sealed by its last entry, read without trusting it, in the order of the reference reader
 * (runtime/bundle/container.py): the digest first, then the document header by header. Every
 * declared length and count is checked (against the bytes present,
 * {@code container.max_container}, the depth and the value budget
 * {@code size / bytes_per_value + value_allowance}) before anything is allocated for it; a map
 * may not repeat a key or have a key that is not a string; binary values stay views of the
 * input ({@link Bin}). Every error is a {@link BundleException} whose path is "".
 *
 * <p>Values: null, {@link Boolean}, {@link Long} (a {@link java.math.BigInteger} above
 * {@code Long.MAX_VALUE}), {@link Double} (float32 and float64), {@link String}, {@link Bin},
 * {@link List}, {@link Map} (file order).
 */
final class Container {
    private static final Map<String, Object> C = Contract.map("container");
    static final long MAX_BUNDLE_BYTES = ((Number) C.get("max_bundle_bytes")).longValue();
    static final int MAX_DEPTH = ((Number) C.get("max_depth")).intValue();
    static final int MAX_CONTAINER = ((Number) C.get("max_container")).intValue();
    private static final int BYTES_PER_VALUE = ((Number) C.get("bytes_per_value")).intValue();
    private static final int VALUE_ALLOWANCE = ((Number) C.get("value_allowance")).intValue();
    private static final int DIGEST_BYTES = ((Number) C.get("digest_bytes")).intValue();
    private static final byte[] DIGEST_TAIL = hex((String) C.get("digest_tail_hex"));
    private static final Object NONE = new Object();

    private Container() {
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

    private static byte[] hex(String s) {
        byte[] out = new byte[s.length() / 2];
        for (int i = 0; i < out.length; i++) {
            out[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
        }
        return out;
    }

    static BundleException error(String code, String why) {
        return new BundleException(code, "", why);
    }

    /**
     * The seal of a file's bytes: its size, then the digest entry at its end and the digest of
     * everything before it (read before anything is parsed); returns the digest, which names an
     * encoder pack. {@code magic} is the format the file should have (a bundle's or an encoder
     * pack's): a file of that format without its digest entry is truncated, any other is no bundle.
     */
    static byte[] sealed(byte[] data, String magic) throws BundleException {
        if (data.length > MAX_BUNDLE_BYTES) {
            throw error("container.size", data.length + " bytes is larger than any bundle (" + MAX_BUNDLE_BYTES + ")");
        }
        int tail = DIGEST_TAIL.length + DIGEST_BYTES;
        int body = data.length - tail;
        if (body < 0 || !java.util.Arrays.equals(data, body, body + DIGEST_TAIL.length, DIGEST_TAIL, 0,
                DIGEST_TAIL.length)) {
            throw unsealed(data, magic);
        }
        try {
            MessageDigest md = MessageDigest.getInstance("SHA-256");
            md.update(data, 0, body);
            byte[] digest = md.digest();
            byte[] stated = java.util.Arrays.copyOfRange(data, data.length - DIGEST_BYTES, data.length);
            if (!MessageDigest.isEqual(digest, stated)) {
                throw error("container.digest", "checksum mismatch: the bytes changed after the file was written");
            }
            return digest;
        } catch (NoSuchAlgorithmException e) {
            throw new BundleException("container.digest", "", "this Java runtime has no SHA-256", e);
        }
    }

    /** The document of sealed bytes ({@link #sealed} first): one msgpack map. */
    static Map<String, Object> read(byte[] data) throws BundleException {
        return Contract.cast(document(data, data.length, 0));
    }

    /** Why a file without its digest entry is refused: a pre-release bundle, a truncated {@code magic} one, or none. */
    private static BundleException unsealed(byte[] data, String magic) {
        int b = data.length == 0 ? 0 : data[0] & 0xff;
        if (!(b >= 0x80 && b <= 0x8f || b == 0xde || b == 0xdf)) {
            return error("container.not_bundle", "not a dpedge bundle: it does not start with a msgpack map");
        }
        Map<?, ?> first;
        try {
            first = (Map<?, ?>) document(data, Math.min(data.length, 4096), 2);
        } catch (BundleException e) {
            first = Collections.emptyMap();
        }
        boolean formatFirst = !first.isEmpty() && "format".equals(first.keySet().iterator().next());
        Object format = formatFirst ? first.get("format") : null;
        if (Contract.string("pre_release_name").equals(format)) {
            return error("container.pre_release", "a pre-release bundle (format " + format + "): rebuild it with "
                    + "`python -m exporter build` (a new release of the data: its epsilon adds to the old one's)");
        }
        if (magic.equals(format)) {
            String what = magic.equals(Contract.string("format")) ? "bundle" : "encoder pack";
            return error("container.truncated", "the " + what + " is truncated or corrupted: it does not end with its "
                    + "sha256 entry");
        }
        return error("container.not_bundle", "not a dpedge bundle: its first entry is not format: dpedge");
    }

    /** An open container: what it holds, the entries it still expects, a map's pending key. */
    private static final class Frame {
        final Map<String, Object> map;
        final List<Object> list;
        long left;
        Object key = NONE;

        Frame(Map<String, Object> map, List<Object> list, long left) {
            this.map = map;
            this.list = list;
            this.left = left;
        }
    }

    private static long uint(byte[] d, int size, long pos, int n) throws BundleException {
        need(size, pos, n);
        long v = 0;
        for (int i = 0; i < n; i++) {
            v = v << 8 | (d[(int) pos + i] & 0xff);
        }
        return v;
    }

    private static void need(int size, long pos, long n) throws BundleException {
        if (n < 0 || pos + n > size) {
            throw error("container.msgpack", "not valid msgpack: a value is cut short");
        }
    }

    /**
     * The one value of {@code d[0, size)}, which must be a map; with {@code firstEntries} > 0,
     * only that many entries of the top map (to identify a file).
     */
    static Object document(byte[] d, int size, int firstEntries) throws BundleException {
        long pos = 0;
        long left = size / BYTES_PER_VALUE + VALUE_ALLOWANCE;
        Object root = NONE;
        Deque<Frame> stack = new ArrayDeque<>();
        while (root == NONE) {
            int b = (int) uint(d, size, pos++, 1);
            Object value;
            long count = 0;
            Frame opened = null;
            if (b <= 0x7f || b >= 0xe0) {
                value = (long) (b <= 0x7f ? b : b - 0x100);
            } else if (b <= 0x9f || (b >= 0xdc && b <= 0xdf)) {
                int n = b == 0xdc || b == 0xde ? 2 : b == 0xdd || b == 0xdf ? 4 : 0;
                count = n == 0 ? b & 0x0f : uint(d, size, pos, n);
                pos += n;
                boolean isMap = b <= 0x8f || b >= 0xde;
                if (count > MAX_CONTAINER) {
                    throw error("container.count", "a msgpack container of " + count + " entries, more than "
                            + MAX_CONTAINER);
                }
                left -= count + 1;
                if (left < 0) {
                    throw error("container.count", "more msgpack values than " + size + " bytes may hold");
                }
                if (stack.size() >= MAX_DEPTH) {
                    throw error("container.depth", "msgpack containers nest deeper than " + MAX_DEPTH);
                }
                opened = isMap ? new Frame(new LinkedHashMap<>(), null, 2 * count)
                        : new Frame(null, new ArrayList<>((int) count), count);
                value = isMap ? opened.map : opened.list;
            } else if (b <= 0xbf || (b >= 0xd9 && b <= 0xdb)) {
                int n = b <= 0xbf ? 0 : 1 << (b - 0xd9);
                long length = n == 0 ? b & 0x1f : uint(d, size, pos, n);
                need(size, pos + n, length);
                try {
                    value = StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                            .onUnmappableCharacter(CodingErrorAction.REPORT)
                            .decode(ByteBuffer.wrap(d, (int) pos + n, (int) length)).toString();
                } catch (CharacterCodingException e) {
                    throw error("container.msgpack", "not valid msgpack: a string is not UTF-8");
                }
                pos += n + length;
            } else if (b >= 0xc4 && b <= 0xc6) {
                int n = 1 << (b - 0xc4);
                long length = uint(d, size, pos, n);
                need(size, pos + n, length);
                value = new Bin(d, (int) pos + n, (int) length);
                pos += n + length;
            } else if (b >= 0xca && b <= 0xd3) {
                int n = b == 0xca ? 4 : b == 0xcb ? 8 : 1 << ((b - 0xcc) & 3);
                long raw = uint(d, size, pos, n);
                pos += n;
                value = b == 0xca ? (Object) (double) Float.intBitsToFloat((int) raw)
                        : b == 0xcb ? (Object) Double.longBitsToDouble(raw)
                        : b == 0xcf && raw < 0 ? (Object) new java.math.BigInteger(Long.toUnsignedString(raw))
                        : b <= 0xcf ? (Object) raw : (Object) (raw << (64 - 8 * n) >> (64 - 8 * n));
            } else if (b == 0xc0 || b == 0xc2 || b == 0xc3) {
                value = b == 0xc0 ? null : (Boolean) (b == 0xc3);
            } else if (b == 0xc1) {
                throw error("container.msgpack", "not valid msgpack: the reserved byte 0xc1");
            } else {
                throw error("container.extension", "a msgpack extension type, which no field may hold");
            }
            if (opened != null && count > 0) {
                stack.push(opened);
                continue;
            }
            while (true) {  // place the value, closing every container it completes
                Frame f = stack.peek();
                if (f == null) {
                    root = value;
                    break;
                }
                if (f.list != null) {
                    f.list.add(value);
                } else if (f.key == NONE) {
                    if (!(value instanceof String)) {
                        throw error("container.key", "a map key that is not a string");
                    }
                    if (f.map.containsKey(value)) {
                        throw error("container.repeated_key", "a map repeats the key '" + value + "'");
                    }
                    f.key = value;
                } else {
                    f.map.put((String) f.key, value);
                    f.key = NONE;
                }
                f.left--;
                if (firstEntries > 0 && stack.size() == 1 && f.map != null && f.map.size() >= firstEntries
                        && f.key == NONE) {
                    return f.map;
                }
                if (f.left > 0) {
                    break;
                }
                stack.pop();
                value = f.map != null ? f.map : f.list;
            }
        }
        if (pos != size && firstEntries == 0) {
            throw error("container.msgpack", "not valid msgpack: bytes after the document");
        }
        if (!(root instanceof Map)) {
            throw error("container.not_bundle", "not a dpedge bundle: its top level is not a msgpack map");
        }
        return root;
    }
}
