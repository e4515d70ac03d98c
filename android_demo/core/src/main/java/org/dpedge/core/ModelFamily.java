package org.dpedge.core;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The model family: what an encoder's ONNX or TFLite bytes may contain, checked before an
 * engine sees them. A port of {@code runtime/bundle/model_family.py}, with the same rules and
 * messages: ONNX operators of the exporter's set only, no subgraphs, functions, training
 * graphs, sparse initializers or external data; TFLite in one subgraph with the exporter's
 * builtin operators only, no custom operators, no buffers outside the flatbuffer, names in
 * UTF-8. Both walkers check every length against the bytes present.
 */
final class ModelFamily {
    static final String FIELD = "encoder.model";
    static final Set<String> ONNX_DOMAINS = new HashSet<>(Arrays.asList("", "ai.onnx", "com.microsoft"));
    static final Set<String> ONNX_OPS = new HashSet<>(Arrays.asList(
            "Add", "Cast", "Clip", "Concat", "Constant", "ConstantOfShape", "DequantizeLinear", "Div", "Equal", "Erf",
            "Expand", "Gather", "LayerNormalization", "MatMul", "Mul", "ReduceL2", "ReduceSum", "Reshape", "Shape",
            "Slice", "Softmax", "Sqrt", "Sub", "Transpose", "Unsqueeze", "Where"));
    static final String ONNX_MICROSOFT_OP = "MatMulNBits";
    static final int MAX_ONNX_NODES = 20_000;
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

    static void check(String format, Msgpack.Bin model) throws BundleException {
        if (format.equals("onnx")) {
            checkOnnx(model.array, model.offset, model.offset + model.length);
        } else {
            checkTflite(ByteBuffer.wrap(model.array, model.offset, model.length).slice().order(ByteOrder.LITTLE_ENDIAN));
        }
    }

    // ------------------------------------------------------------------ ONNX (protobuf)

    /** One protobuf field: number, wire type, and [a, b) for length-delimited values. */
    private static final class Field {
        int number;
        int wire;
        long value;
        int a;
        int b;
    }

    /** Where the model starts in the bundle's bytes: messages count bytes from there, as Python's do. */
    private static int base;

    /** The fields of one message in [start, end), in order. */
    private static List<Field> fields(byte[] buf, int start, int end) throws Bad {
        List<Field> out = new ArrayList<>();
        int[] pos = {start};
        while (pos[0] < end) {
            long key = varint(buf, pos, end);
            Field f = new Field();
            f.number = (int) (key >>> 3);
            f.wire = (int) (key & 7);
            if ((key >>> 3) == 0) {
                throw new Bad("field number 0 at byte " + (pos[0] - base));
            }
            if (f.wire == 0) {
                f.value = varint(buf, pos, end);
            } else if (f.wire == 1 || f.wire == 5) {
                int size = f.wire == 1 ? 8 : 4;
                if (end - pos[0] < size) {
                    throw new Bad("fixed-size field cut short at byte " + (pos[0] - base));
                }
                f.a = pos[0];
                f.b = pos[0] + size;
                pos[0] += size;
            } else if (f.wire == 2) {
                long size = varint(buf, pos, end);
                if (size > end - pos[0] || size < 0) {
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

    private static long varint(byte[] buf, int[] pos, int end) throws Bad {
        long value = 0;
        int shift = 0;
        while (true) {
            if (pos[0] >= end) {
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

    /** The last occurrence of a string field ("" if absent), protobuf's rule for scalars. */
    private static String string(byte[] buf, List<Field> fs, int number) throws Bad {
        String value = "";
        for (Field f : fs) {
            if (f.number == number) {
                if (f.wire != 2) {
                    throw new Bad("field " + number + " has wire type " + f.wire + ", expected a message");
                }
                try {
                    value = StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                            .decode(ByteBuffer.wrap(buf, f.a, f.b - f.a)).toString();
                } catch (CharacterCodingException e) {
                    throw new Bad("field " + number + " is not UTF-8");
                }
            }
        }
        return value;
    }

    private static void onnxTensor(byte[] buf, int a, int b, String what) throws Bad, Refused {
        for (Field f : fields(buf, a, b)) {
            if (f.number == 13 || (f.number == 14 && f.wire == 0 && f.value == 1)) {
                throw new Refused(what + " keeps its data in an external file, which an engine would read from disk");
            }
        }
    }

    private static void onnxNode(byte[] buf, int a, int b) throws Bad, Refused {
        List<Field> fs = fields(buf, a, b);
        String op = string(buf, fs, 4);
        String domain = string(buf, fs, 7);
        boolean known = (domain.isEmpty() || domain.equals("ai.onnx")) ? ONNX_OPS.contains(op)
                : domain.equals("com.microsoft") && op.equals(ONNX_MICROSOFT_OP);
        if (!known) {
            String shown = domain.isEmpty() ? op : domain + "." + op;
            shown = shown.length() > 80 ? shown.substring(0, 80) : shown;
            throw new Refused("operator " + Msgpack.reprString(shown) + " is not one the encoder family uses");
        }
        for (Field attr : fs) {
            if (attr.number != 5) {
                continue;
            }
            if (attr.wire != 2) {
                throw new Bad("field 5 has wire type " + attr.wire + ", expected a message");
            }
            for (Field f : fields(buf, attr.a, attr.b)) {
                if (f.number == 6 || f.number == 11) {
                    throw new Refused("operator " + Msgpack.reprString(op)
                            + " has a subgraph attribute (control flow is not in the family)");
                }
                if (f.number == 22 || f.number == 23) {
                    throw new Refused("operator " + Msgpack.reprString(op) + " has a sparse tensor attribute");
                }
                if (f.number == 5 || f.number == 10) {
                    onnxTensor(buf, f.a, f.b, "an attribute tensor of operator " + Msgpack.reprString(op));
                }
            }
        }
    }

    static synchronized void checkOnnx(byte[] buf, int start, int end) throws BundleException {
        base = start;
        try {
            int graphs = 0;
            int nodes = 0;
            for (Field f : fields(buf, start, end)) {
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
                    String domain = string(buf, fields(buf, f.a, f.b), 1);
                    if (!ONNX_DOMAINS.contains(domain)) {
                        String shown = domain.length() > 80 ? domain.substring(0, 80) : domain;
                        throw new Refused("operator set domain " + Msgpack.reprString(shown)
                                + " is not one the encoder family uses");
                    }
                }
                if (f.number == 7) {
                    if (f.wire != 2) {
                        throw new Bad("graph has wire type " + f.wire);
                    }
                    graphs++;
                    for (Field g : fields(buf, f.a, f.b)) {
                        if (g.number == 1 || g.number == 5 || g.number == 15) {
                            if (++nodes > MAX_ONNX_NODES) {
                                throw new Refused("the graph has more than " + MAX_ONNX_NODES
                                        + " nodes and initializers");
                            }
                            if (g.wire != 2) {
                                throw new Bad("graph field " + g.number + " has wire type " + g.wire
                                        + ", expected a message");
                            }
                        }
                        if (g.number == 15) {
                            throw new Refused("the graph has a sparse initializer (the encoder family has none)");
                        }
                        if (g.number == 5) {
                            onnxTensor(buf, g.a, g.b, "an initializer");
                        } else if (g.number == 1) {
                            onnxNode(buf, g.a, g.b);
                        }
                    }
                }
            }
            if (graphs == 0) {
                throw new Bad("it has no graph");
            }
        } catch (Bad e) {
            throw new BundleException("field '" + FIELD + "' is not a valid ONNX model: " + e.getMessage());
        } catch (Refused e) {
            throw new BundleException("field '" + FIELD + "' is outside the ONNX encoder family: " + e.getMessage());
        }
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
            throw new Refused(what + " " + Msgpack.reprBytes(new Msgpack.Bin(shown, 0, shown.length)) + " is not UTF-8");
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
                            + Msgpack.reprBytes(new Msgpack.Bin(shown, 0, shown.length)));
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
            throw new BundleException("field '" + FIELD + "' is not a valid TFLite model: " + e.getMessage());
        } catch (Refused e) {
            throw new BundleException("field '" + FIELD + "' is outside the TFLite encoder family: " + e.getMessage());
        }
    }
}
