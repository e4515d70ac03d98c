package org.dpedge.core;

import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The model family: what an encoder's ONNX or TFLite bytes may contain, checked before an
 * engine sees them. A port of {@code runtime/bundle/model_family.py}, with the same rules and
 * messages: ONNX with the exporter's operators only, no subgraphs, functions, training graphs
 * or sparse initializers, and external data only in initializers and only in the bundle's form
 * (the placeholder location and 20-digit offset and length inside {@code encoder.weights});
 * TFLite in one subgraph with the exporter's builtin operators only, no custom operators, no
 * buffers outside the flatbuffer, names in UTF-8. Both walkers check every length against the
 * bytes present.
 */
public final class ModelFamily {
    static final String FIELD = "encoder.model";
    static final Set<String> ONNX_DOMAINS = new HashSet<>(Arrays.asList("", "ai.onnx", "com.microsoft"));
    static final Set<String> ONNX_OPS = new HashSet<>(Arrays.asList(
            "Add", "Cast", "Clip", "Concat", "Constant", "ConstantOfShape", "DequantizeLinear", "Div", "Equal", "Erf",
            "Expand", "Gather", "LayerNormalization", "MatMul", "Mul", "ReduceL2", "ReduceSum", "Reshape", "Shape",
            "Slice", "Softmax", "Sqrt", "Sub", "Transpose", "Unsqueeze", "Where"));
    static final String ONNX_MICROSOFT_OP = "MatMulNBits";
    static final int MAX_ONNX_NODES = 20_000;
    static final int NUMBER_DIGITS = 20;
    static final Map<Integer, String> TFLITE_OPS = new HashMap<>();
    static final int MAX_TFLITE_OPERATORS = 20_000;
    private static final int MOST_CODES = 1000;
    private static final int MOST_SUBGRAPHS = 16;
    private static final int MOST_SIGNATURES = 16;
    private static final int MOST_SIGNATURE_TENSORS = 64;

    static {
        Object[] ops = {"ADD", 0, "CONCATENATION", 2, "DEQUANTIZE", 6, "FULLY_CONNECTED", 9, "L2_NORMALIZATION", 11,
            "MUL", 18, "RESHAPE", 22, "SOFTMAX", 25, "GATHER", 36, "TRANSPOSE", 39, "MEAN", 40, "SUB", 41,
            "STRIDED_SLICE", 45, "CAST", 53, "EXPAND_DIMS", 70, "RSQRT", 76, "SHAPE", 77, "REDUCE_PROD", 81, "PACK", 83,
            "ZEROS_LIKE", 93, "RANGE", 96, "SQUARED_DIFFERENCE", 99, "BATCH_MATMUL", 126, "BROADCAST_TO", 130,
            "GELU", 150};
        for (int i = 0; i < ops.length; i += 2) {
            TFLITE_OPS.put((Integer) ops[i + 1], (String) ops[i]);
        }
    }

    /**
     * An ONNX initializer whose data is in {@code encoder.weights}: {@code length} bytes from
     * {@code offset}. Its name, ONNX data type (TensorProto.DataType: 1 float, 2 uint8, 3 int8...)
     * and dims are read for an engine that takes initializers by name (ONNX Runtime's Java
     * {@code addExternalInitializers}); they are not part of the family check.
     */
    public static final class ExternalData {
        public final String name;
        public final int dataType;
        public final long[] dims;
        public final long offset;
        public final long length;

        ExternalData(String name, int dataType, long[] dims, long offset, long length) {
            this.name = name;
            this.dataType = dataType;
            this.dims = dims;
            this.offset = offset;
            this.length = length;
        }
    }

    /** A malformed model (becomes "is not a valid ... model"). */
    private static final class Bad extends Exception {
        private static final long serialVersionUID = 1L;

        Bad(String why) {
            super(why);
        }
    }

    /** A well-formed model outside the family. */
    private static final class Refused extends Exception {
        private static final long serialVersionUID = 1L;

        Refused(String why) {
            super(why);
        }
    }

    private ModelFamily() {
    }

    /** Refuses a model outside the family; an ONNX model's external data, each range inside {@code weightsBytes}. */
    static List<ExternalData> check(String format, Msgpack.Bin model, long weightsBytes) throws BundleException {
        if (format.equals("onnx")) {
            return new Onnx(model).check(weightsBytes);
        }
        checkTflite(ByteBuffer.wrap(model.array, model.offset, model.length).slice().order(ByteOrder.LITTLE_ENDIAN));
        return Collections.emptyList();
    }

    // ------------------------------------------------------------------ ONNX (protobuf)

    /** One protobuf field: number, wire type, the varint's value, and [a, b) for other wire types. */
    private static final class Field {
        int number;
        int wire;
        long value;
        int a;
        int b;
    }

    /** A walk over one ONNX model's bytes; positions in messages count from its first byte, as Python's do. */
    private static final class Onnx {
        private final byte[] buf;
        private final int base;
        private final int end;
        private final List<ExternalData> refs = new ArrayList<>();
        private final List<BigInteger> ends = new ArrayList<>();
        private int nodes;

        Onnx(Msgpack.Bin model) {
            buf = model.array;
            base = model.offset;
            end = model.offset + model.length;
        }

        private long varint(int[] pos, int limit) throws Bad {
            long value = 0;
            int shift = 0;
            while (true) {
                if (pos[0] >= limit) {
                    throw new Bad("varint cut short at byte " + (pos[0] - base));
                }
                int b = buf[pos[0]++] & 0xff;
                if (shift < 64) {
                    value |= (long) (b & 0x7f) << shift;
                }
                if ((b & 0x80) == 0) {
                    return value;
                }
                shift += 7;
                if (shift >= 70) {
                    throw new Bad("varint longer than 10 bytes at byte " + (pos[0] - base));
                }
            }
        }

        /** The fields of one message in [start, stop), in order. */
        private List<Field> fields(int start, int stop) throws Bad {
            List<Field> out = new ArrayList<>();
            int[] pos = {start};
            while (pos[0] < stop) {
                long key = varint(pos, stop);
                Field f = new Field();
                f.number = (int) (key >>> 3);
                f.wire = (int) (key & 7);
                if ((key >>> 3) == 0) {
                    throw new Bad("field number 0 at byte " + (pos[0] - base));
                }
                if (f.wire == 0) {
                    f.value = varint(pos, stop);
                } else if (f.wire == 1 || f.wire == 5) {
                    int size = f.wire == 1 ? 8 : 4;
                    if (stop - pos[0] < size) {
                        throw new Bad("fixed-size field cut short at byte " + (pos[0] - base));
                    }
                    f.a = pos[0];
                    f.b = pos[0] + size;
                    pos[0] += size;
                } else if (f.wire == 2) {
                    long size = varint(pos, stop);
                    if (size > stop - pos[0] || size < 0) {
                        throw new Bad("length " + Long.toUnsignedString(size) + " at byte " + (pos[0] - base)
                                + " runs past the end of its message");
                    }
                    f.a = pos[0];
                    f.b = pos[0] + (int) size;
                    pos[0] += (int) size;
                } else {
                    throw new Bad("wire type " + f.wire + " at byte " + (pos[0] - base));
                }
                out.add(f);
            }
            return out;
        }

        private String utf8(int a, int b, String what) throws Bad {
            try {
                return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                        .decode(ByteBuffer.wrap(buf, a, b - a)).toString();
            } catch (CharacterCodingException e) {
                throw new Bad(what);
            }
        }

        /** The last occurrence of a string field ("" if absent), protobuf's rule for scalars. */
        private String string(List<Field> fs, int number) throws Bad {
            String value = "";
            for (Field f : fs) {
                if (f.number == number) {
                    if (f.wire != 2) {
                        throw new Bad("field " + number + " has wire type " + f.wire + ", expected a message");
                    }
                    value = utf8(f.a, f.b, "field " + number + " is not UTF-8");
                }
            }
            return value;
        }

        /** A StringStringEntryProto: {key, value}, each once. */
        private String[] entry(Field e) throws Bad {
            Field key = null;
            Field value = null;
            for (Field f : e.wire == 0 ? Collections.<Field>emptyList() : fields(e.a, e.b)) {
                if (f.number == 1 || f.number == 2) {
                    if (f.wire != 2 || (f.number == 1 ? key : value) != null) {
                        throw new Bad("an external-data entry repeats its key or value, or is not a string");
                    }
                    if (f.number == 1) {
                        key = f;
                    } else {
                        value = f;
                    }
                }
            }
            if (key == null || value == null) {
                throw new Bad("an external-data entry lacks its key or value");
            }
            String what = "an external-data entry is not UTF-8";
            return new String[] {utf8(key.a, key.b, what), utf8(value.a, value.b, what)};
        }

        /**
         * An inline tensor; or, for a graph initializer ({@code initializer} true), one whose
         * data is in encoder.weights in exactly the bundle's form: data_location EXTERNAL, no
         * raw_data, and the entries location, offset, length in that order.
         */
        private void tensor(Field t, String what, boolean initializer) throws Bad, Refused {
            List<String[]> entries = new ArrayList<>();
            boolean external = false;
            boolean raw = false;
            List<Field> fs = t.wire == 0 ? Collections.<Field>emptyList() : fields(t.a, t.b);
            for (Field f : fs) {
                if (f.number == 13) {
                    entries.add(entry(f));
                } else if (f.number == 14 && f.wire == 0 && f.value == 1) {
                    external = true;
                }
                raw |= f.number == 9;
            }
            if (entries.isEmpty() && !external) {
                return;
            }
            if (!initializer) {
                throw new Refused(what + " keeps its data outside the graph, which only initializers may");
            }
            List<String> keys = new ArrayList<>();
            for (String[] e : entries.subList(0, Math.min(4, entries.size()))) {
                keys.add(Text.reprString(e[0]));
            }
            if (!external || raw || entries.size() != 3 || !entries.get(0)[0].equals("location")
                    || !entries.get(1)[0].equals("offset") || !entries.get(2)[0].equals("length")) {
                throw new Refused(what + " has external data [" + String.join(", ", keys) + "] (data_location "
                        + (external ? "EXTERNAL" : "DEFAULT") + "); the family's are exactly location, offset, length");
            }
            String location = entries.get(0)[1];
            String offset = entries.get(1)[1];
            String length = entries.get(2)[1];
            if (!location.equals(Bundle.Encoder.WEIGHTS_LOCATION) || !isNumber(offset) || !isNumber(length)) {
                throw new Refused(what + " names external data " + Text.reprString(cut(location, 40)) + " at "
                        + Text.reprString(cut(offset, 24)) + ", " + Text.reprString(cut(length, 24))
                        + ": the family's location is the weights placeholder and its offset and length "
                        + NUMBER_DIGITS + "-digit numbers");
            }
            BigInteger start = new BigInteger(offset);
            BigInteger size = new BigInteger(length);
            ends.add(start.add(size));  // 20 digits may pass a long: the range check refuses those
            refs.add(describe(fs, clamp(start), clamp(size)));
        }

        /** An external tensor's name, data type and dims, for an engine (never a reason to refuse). */
        private ExternalData describe(List<Field> fs, long offset, long length) {
            String name = "";
            int dataType = 0;
            List<Long> dims = new ArrayList<>();
            for (Field f : fs) {
                try {
                    if (f.number == 8 && f.wire == 2) {
                        name = utf8(f.a, f.b, "name");
                    } else if (f.number == 2 && f.wire == 0) {
                        dataType = (int) f.value;
                    } else if (f.number == 1 && f.wire == 0) {
                        dims.add(f.value);
                    } else if (f.number == 1 && f.wire == 2) {  // packed
                        for (int[] pos = {f.a}; pos[0] < f.b; ) {
                            dims.add(varint(pos, f.b));
                        }
                    }
                } catch (Bad e) {
                    // not readable: the engine will say so; the family has nothing against it
                }
            }
            long[] d = new long[dims.size()];
            for (int i = 0; i < d.length; i++) {
                d[i] = dims.get(i);
            }
            return new ExternalData(name, dataType, d, offset, length);
        }

        private void node(Field n) throws Bad, Refused {
            List<Field> fs = fields(n.a, n.b);
            String op = string(fs, 4);
            String domain = string(fs, 7);
            boolean known = (domain.isEmpty() || domain.equals("ai.onnx")) ? ONNX_OPS.contains(op)
                    : domain.equals("com.microsoft") && op.equals(ONNX_MICROSOFT_OP);
            if (!known) {
                throw new Refused("operator " + Text.reprString(cut(domain.isEmpty() ? op : domain + "." + op, 80))
                        + " is not one the encoder family uses");
            }
            for (Field attr : fs) {
                if (attr.number != 5) {
                    continue;
                }
                if (attr.wire != 2) {
                    throw new Bad("field 5 has wire type " + attr.wire + ", expected a message");
                }
                for (Field f : fields(attr.a, attr.b)) {
                    if (f.number == 6 || f.number == 11) {
                        throw new Refused("operator " + Text.reprString(op)
                                + " has a subgraph attribute (control flow is not in the family)");
                    }
                    if (f.number == 22 || f.number == 23) {
                        throw new Refused("operator " + Text.reprString(op) + " has a sparse tensor attribute");
                    }
                    if (f.number == 5 || f.number == 10) {
                        tensor(f, "an attribute tensor of operator " + Text.reprString(op), false);
                    }
                }
            }
        }

        private void graph(Field g) throws Bad, Refused {
            for (Field f : fields(g.a, g.b)) {
                if (f.number == 1 || f.number == 5 || f.number == 15) {
                    if (++nodes > MAX_ONNX_NODES) {
                        throw new Refused("the graph has more than " + MAX_ONNX_NODES + " nodes and initializers");
                    }
                    if (f.wire != 2) {
                        throw new Bad("graph field " + f.number + " has wire type " + f.wire + ", expected a message");
                    }
                }
                if (f.number == 15) {
                    throw new Refused("the graph has a sparse initializer (the encoder family has none)");
                }
                if (f.number == 5) {
                    tensor(f, "an initializer", true);
                } else if (f.number == 1) {
                    node(f);
                }
            }
        }

        List<ExternalData> check(long weightsBytes) throws BundleException {
            try {
                int graphs = 0;
                for (Field f : fields(base, end)) {
                    if (f.number == 25) {
                        throw new Refused("the model defines its own functions (the encoder family has none)");
                    }
                    if (f.number == 20) {
                        throw new Refused("the model carries training graphs (the encoder family has none)");
                    }
                    if (f.number == 8) {
                        if (f.wire != 2) {
                            throw new Bad("opset_import has wire type " + f.wire);
                        }
                        String domain = string(fields(f.a, f.b), 1);
                        if (!ONNX_DOMAINS.contains(domain)) {
                            throw new Refused("operator set domain " + Text.reprString(cut(domain, 80))
                                    + " is not one the encoder family uses");
                        }
                    }
                    if (f.number == 7) {
                        if (f.wire != 2) {
                            throw new Bad("graph has wire type " + f.wire);
                        }
                        graphs++;
                        graph(f);
                    }
                }
                if (graphs != 1) {
                    throw new Bad("it has " + graphs + " graphs, not one");
                }
                for (BigInteger last : ends) {
                    if (last.compareTo(BigInteger.valueOf(weightsBytes)) > 0) {
                        throw new Refused("an initializer's external data ends at byte " + last + ", past the "
                                + weightsBytes + " bytes of encoder.weights");
                    }
                }
            } catch (Bad e) {
                throw new BundleException("field '" + FIELD + "' is not a valid ONNX model: " + Text.escape(e.getMessage()));
            } catch (Refused e) {
                throw new BundleException("field '" + FIELD + "' is outside the ONNX encoder family: "
                        + Text.escape(e.getMessage()));
            }
            return Collections.unmodifiableList(refs);
        }
    }

    private static long clamp(BigInteger n) {
        return n.min(BigInteger.valueOf(Long.MAX_VALUE)).longValue();
    }

    private static boolean isNumber(String s) {
        return s.length() == NUMBER_DIGITS && s.chars().allMatch(c -> c >= '0' && c <= '9');
    }

    /** Python's {@code s[:n]} in code points. */
    private static String cut(String s, int n) {
        return s.codePointCount(0, s.length()) <= n ? s : s.substring(0, s.offsetByCodePoints(0, n));
    }

    // ------------------------------------------------------------------ TFLite (flatbuffer)

    /** Bounds-checked reads of a flatbuffer (schema.fbs field indices). */
    private static final class Flat {
        final ByteBuffer b;
        final long n;

        Flat(ByteBuffer b) {
            this.b = b;
            this.n = b.limit();
        }

        long u(int size, long pos) throws Bad {
            if (pos < 0 || pos > n - size) {
                throw new Bad("offset " + pos + " is outside the " + n + " bytes");
            }
            int p = (int) pos;
            switch (size) {
                case 1: return b.get(p) & 0xffL;
                case 2: return b.getShort(p) & 0xffffL;
                case 4: return b.getInt(p) & 0xffffffffL;
                default: return b.getLong(p);
            }
        }

        long s32(long pos) throws Bad {
            return (int) u(4, pos);
        }

        /** Absolute position of a table's field, -1 when absent. */
        long field(long table, int index) throws Bad {
            long vtable = table - s32(table);
            long vsize = u(2, vtable);
            if (vsize < 4 || vsize % 2 != 0) {
                throw new Bad("vtable at " + vtable + " has size " + vsize);
            }
            if (4 + 2L * index >= vsize) {
                return -1;
            }
            long rel = u(2, vtable + 4 + 2L * index);
            return rel == 0 ? -1 : table + rel;
        }

        long ref(long pos) throws Bad {
            return pos + u(4, pos);
        }

        long scalar(long table, int index, int size, boolean signed) throws Bad {
            long at = field(table, index);
            if (at < 0) {
                return 0;
            }
            long v = u(size, at);
            return signed && size == 1 ? (byte) v : signed && size == 4 ? (int) v : v;
        }

        /** {first element position, length}. */
        long[] vector(long table, int index) throws Bad {
            long at = field(table, index);
            if (at < 0) {
                return new long[] {0, 0};
            }
            long vec = ref(at);
            long length = u(4, vec);
            if (length > (n - vec - 4) / 4) {
                throw new Bad("vector at " + vec + " declares " + length + " elements, more than its bytes hold");
            }
            return new long[] {vec + 4, length};
        }

        List<Long> tables(long table, int index, int most, String what) throws Bad, Refused {
            long[] v = vector(table, index);
            if (v[1] > most) {
                throw new Refused("it has " + v[1] + " " + what + ", more than the family allows (" + most + ")");
            }
            List<Long> out = new ArrayList<>();
            for (long i = 0; i < v[1]; i++) {
                out.add(ref(v[0] + 4 * i));
            }
            return out;
        }

        byte[] string(long table, int index) throws Bad {
            long at = field(table, index);
            if (at < 0) {
                return null;
            }
            long s = ref(at);
            long length = u(4, s);
            if (length > n - s - 4) {
                throw new Bad("string at " + s + " declares " + length + " bytes, more than there are");
            }
            byte[] out = new byte[(int) length];
            for (int i = 0; i < length; i++) {
                out[i] = b.get((int) (s + 4 + i));
            }
            return out;
        }
    }

    private static void utf8(byte[] raw, String what) throws Refused {
        if (raw == null) {
            return;
        }
        try {
            StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(raw));
        } catch (CharacterCodingException e) {
            byte[] shown = Arrays.copyOf(raw, Math.min(raw.length, 40));
            throw new Refused(what + " " + Text.reprBytes(shown) + " is not UTF-8");
        }
    }

    static void checkTflite(ByteBuffer model) throws BundleException {
        Flat fb = new Flat(model);
        try {
            if (fb.n < 8) {
                throw new Bad(fb.n + " bytes cannot hold a flatbuffer");
            }
            long root = fb.u(4, 0);
            int codes = 0;
            for (long oc : fb.tables(root, 1, MOST_CODES, "operator codes")) {
                byte[] custom = fb.string(oc, 1);
                if (custom != null) {
                    byte[] shown = Arrays.copyOf(custom, Math.min(custom.length, 40));
                    throw new Refused("it uses a custom operator "
                            + Text.reprBytes(shown));
                }
                long code = Math.max(fb.scalar(oc, 0, 1, true), fb.scalar(oc, 3, 4, true));
                if (!TFLITE_OPS.containsKey((int) code) || code != (int) code) {
                    throw new Refused("builtin operator code " + code + " is not one the encoder family uses");
                }
                codes++;
            }
            List<Long> subgraphs = fb.tables(root, 2, MOST_SUBGRAPHS, "subgraphs");
            if (subgraphs.size() != 1) {
                throw new Refused("it has " + subgraphs.size()
                        + " subgraphs; the encoder family has one (control flow needs more)");
            }
            long sg = subgraphs.get(0);
            for (long op : fb.tables(sg, 3, MAX_TFLITE_OPERATORS, "operators")) {
                long index = fb.scalar(op, 0, 4, false);
                if (index >= codes) {
                    throw new Bad("an operator names operator code " + index + " of " + codes);
                }
            }
            for (long t : fb.tables(sg, 0, 2 * MAX_TFLITE_OPERATORS, "tensors")) {
                utf8(fb.string(t, 3), "a tensor name");
            }
            for (long buffer : fb.tables(root, 4, 2 * MAX_TFLITE_OPERATORS + 1, "buffers")) {
                if (fb.scalar(buffer, 1, 8, false) != 0 || fb.scalar(buffer, 2, 8, false) != 0) {
                    throw new Refused("a buffer is stored outside the flatbuffer (the encoder family keeps all inside)");
                }
            }
            for (long sig : fb.tables(root, 7, MOST_SIGNATURES, "signatures")) {
                utf8(fb.string(sig, 2), "a signature key");
                for (int index : new int[] {0, 1}) {
                    for (long tm : fb.tables(sig, index, MOST_SIGNATURE_TENSORS, "signature tensors")) {
                        utf8(fb.string(tm, 0), "a signature tensor name");
                    }
                }
            }
        } catch (Bad e) {
            throw new BundleException("field '" + FIELD + "' is not a valid TFLite model: " + Text.escape(e.getMessage()));
        } catch (Refused e) {
            throw new BundleException("field '" + FIELD + "' is outside the TFLite encoder family: "
                    + Text.escape(e.getMessage()));
        }
    }
}
