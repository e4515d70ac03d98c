package org.dpedge.core;

import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The model family (runtime/bundle/model_family.py): what an encoder's ONNX or TFLite bytes
 * may contain, checked before an engine sees them, with the operator sets and bounds of
 * schema.json "onnx" and "tflite" and the encoder families of "families" ({@code encoder.family},
 * 1.2; absent: bert): each lists the formats it is read in and its own ONNX operators, allowed
 * besides the common ones. ONNX: the family's operators only, no subgraph, model-local
 * function, training graph or sparse initializer, external data only in initializers and only
 * in the bundle's form (the placeholder location, fixed-width offset and length inside
 * {@code encoder.weights}), a node's input left out (an empty name) only where schema.json's
 * onnx "optional_inputs" allows. TFLite (bert's alone): one subgraph, the family's builtin operators
 * only, no custom operator, no buffer outside the flatbuffer, names in UTF-8, every tensor index
 * of an operator or of the subgraph one of its tensors (-1, an input left out, only where
 * schema.json's "optional_inputs" allows it), none of the Tensor and Operator fields of its
 * "absent_fields" (variable and sparse tensors, custom options). Both walkers check
 * every length against the bytes present. Any refusal is {@code model.family} at
 * {@code encoder.model}.
 */
public final class ModelFamily {
    static final String FIELD = "encoder.model";
    private static final Map<String, Object> ONNX = Contract.map("onnx");
    private static final Map<String, Object> TFLITE = Contract.map("tflite");

    /** A bound of schema.json's "tflite" section. */
    private static int tflite(String key) {
        return ((Number) TFLITE.get(key)).intValue();
    }
    /** The family of an encoder without {@code encoder.family} (as runtime/bundle/schema.py DEFAULT_FAMILY). */
    static final String DEFAULT_FAMILY = "bert";
    /** Each family's encoder formats, and its ONNX operators (the common ones and its own) as "domain\0op". */
    private static final Map<String, List<?>> FAMILY_FORMATS = new HashMap<>();
    private static final Map<String, Set<String>> FAMILY_ONNX_OPS = new HashMap<>();
    private static final String WEIGHTS_LOCATION;
    private static final int DIGITS = ((Number) ONNX.get("number_digits")).intValue();

    static {
        Set<String> common = operators((List<?>) ONNX.get("ops"), new HashSet<>());
        Contract.map("families").forEach((name, f) -> {
            Map<?, ?> family = (Map<?, ?>) f;
            FAMILY_FORMATS.put(name, (List<?>) family.get("formats"));
            FAMILY_ONNX_OPS.put(name, operators((List<?>) family.get("onnx_ops"), new HashSet<>(common)));
        });
        StringBuilder location = new StringBuilder((String) ONNX.get("weights_location"));
        while (location.length() < ((Number) ONNX.get("weights_location_bytes")).intValue()) {
            location.append('.');
        }
        WEIGHTS_LOCATION = location.toString();
    }

    /** Whether schema.json's onnx "optional_inputs" lets the operator leave input {@code position} out. */
    private static boolean optionalInput(String domain, String op, int position) {
        for (Object row : (List<?>) ONNX.get("optional_inputs")) {
            List<?> r = (List<?>) row;
            if (r.get(0).equals(domain) && r.get(1).equals(op)) {
                for (Object p : (List<?>) r.get(2)) {
                    if (((Number) p).intValue() == position) {
                        return true;
                    }
                }
            }
        }
        return false;
    }

    /** {@code into} with schema.json's [domain, op] pairs added as "domain\0op". */
    private static Set<String> operators(List<?> ops, Set<String> into) {
        for (Object op : ops) {
            into.add(((List<?>) op).get(0) + "\0" + ((List<?>) op).get(1));
        }
        return into;
    }

    /**
     * An ONNX initializer whose data is in {@code encoder.weights}: {@code length} bytes from
     * {@code offset}, with its name, ONNX data type (1 float, 2 uint8, 3 int8...) and dims, for
     * an engine that takes initializers by name (ONNX Runtime's {@code addExternalInitializers}).
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

    /** Internal: the model is malformed or outside the family. */
    private static final class Refused extends Exception {
        private static final long serialVersionUID = 1L;

        Refused(String why) {
            super(why);
        }
    }

    private ModelFamily() {
    }

    /**
     * Refuses a model outside the encoder family {@code family} (a checked {@code encoder.family},
     * or {@link #DEFAULT_FAMILY}): first a format the family is not read in, before the bytes are
     * parsed; returns an ONNX model's external data, each range inside {@code weightsBytes}.
     */
    static List<ExternalData> check(String format, String family, Container.Bin model, long weightsBytes)
            throws BundleException {
        if (!FAMILY_FORMATS.get(family).contains(format)) {
            throw new BundleException("model.family", FIELD, "field '" + FIELD + "' is outside the encoder families: "
                    + "the " + family + " family has no " + format + " form");
        }
        try {
            if (format.equals("onnx")) {
                return new Onnx(model, FAMILY_ONNX_OPS.get(family)).check(weightsBytes);
            }
            tflite(new Flat(model.buffer().order(ByteOrder.LITTLE_ENDIAN)));
            return Collections.emptyList();
        } catch (Refused e) {
            throw new BundleException("model.family", FIELD, "field '" + FIELD + "' is not a model of the " + family
                    + " encoder family in " + format + ": " + e.getMessage());
        }
    }

    private static String utf8(ByteBuffer b, String what) throws Refused {
        try {
            return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(b).toString();
        } catch (CharacterCodingException e) {
            throw new Refused(what + " is not UTF-8");
        }
    }

    // ------------------------------------------------------------------ ONNX (protobuf)

    /** One protobuf field: its number (-1 past 2^61), wire type, a varint's value, [a, b) for the others. */
    private static final class Field {
        long number;
        int wire;
        long value;
        int a;
        int b;
    }

    private static final class Onnx {
        private final byte[] buf;
        private final int base;
        private final List<ExternalData> refs = new ArrayList<>();
        private final List<BigInteger> ends = new ArrayList<>();
        /** The operators of the encoder's family, as "domain\0op". */
        private final Set<String> ops;
        private int nodes;

        Onnx(Container.Bin model, Set<String> ops) {
            buf = model.array;
            base = model.offset;
            end = model.offset + model.length;
            this.ops = ops;
        }

        private final int end;
        /** Whether the last varint had bits beyond the 64 a long holds. */
        private boolean overflow;

        private long varint(int[] pos, int limit) throws Refused {
            long value = 0;
            overflow = false;
            for (int shift = 0; ; shift += 7) {
                if (shift >= 70) {
                    throw new Refused("a varint longer than 10 bytes");
                }
                if (pos[0] >= limit) {
                    throw new Refused("a varint cut short");
                }
                int b = buf[pos[0]++] & 0xff;
                value |= shift < 64 ? (long) (b & 0x7f) << shift : 0;
                overflow |= (shift == 63 && (b & 0x7e) != 0) || (shift > 63 && (b & 0x7f) != 0);
                if ((b & 0x80) == 0) {
                    return value;
                }
            }
        }

        private List<Field> fields(int start, int stop) throws Refused {
            List<Field> out = new ArrayList<>();
            int[] pos = {start};
            while (pos[0] < stop) {
                long key = varint(pos, stop);
                Field f = new Field();
                f.number = overflow ? -1 : key >>> 3;
                f.wire = (int) (key & 7);
                if (f.number == 0) {
                    throw new Refused("field number 0");
                }
                if (f.wire == 0) {
                    f.value = varint(pos, stop);
                    f.value = overflow ? -1 : f.value;
                } else if (f.wire == 1 || f.wire == 5 || f.wire == 2) {
                    long size = f.wire == 1 ? 8 : f.wire == 5 ? 4 : varint(pos, stop);
                    if ((f.wire == 2 && overflow) || size < 0 || size > stop - pos[0]) {
                        throw new Refused("a field runs past the end of its message");
                    }
                    f.a = pos[0];
                    f.b = pos[0] + (int) size;
                    pos[0] = f.b;
                } else {
                    throw new Refused("wire type " + f.wire);
                }
                out.add(f);
            }
            return out;
        }

        /** The fields of a field's value read as a message (a varint's value holds none). */
        private List<Field> message(Field f) throws Refused {
            return f.wire == 0 ? Collections.emptyList() : fields(f.a, f.b);
        }

        private String text(Field f) throws Refused {
            return utf8(ByteBuffer.wrap(buf, f.a, f.b - f.a), "a name");
        }

        /** The last occurrence of a string field ("" when absent), each occurrence a message. */
        private String string(List<Field> fs, int number) throws Refused {
            Field last = null;
            for (Field f : fs) {
                if (f.number == number) {
                    if (f.wire != 2) {
                        throw new Refused("field " + number + " is not a message");
                    }
                    last = f;
                }
            }
            return last == null ? "" : text(last);
        }

        /** A StringStringEntryProto: {key, value}, each once. */
        private String[] entry(Field e) throws Refused {
            Field[] kv = new Field[2];
            for (Field f : message(e)) {
                if (f.number == 1 || f.number == 2) {
                    if (f.wire != 2 || kv[(int) f.number - 1] != null) {
                        throw new Refused("an external-data entry repeats its key or value, or is not a string");
                    }
                    kv[(int) f.number - 1] = f;
                }
            }
            if (kv[0] == null || kv[1] == null) {
                throw new Refused("an external-data entry lacks its key or value");
            }
            return new String[] {text(kv[0]), text(kv[1])};
        }

        /** An inline tensor; or, for a graph initializer, one whose data is in encoder.weights in the bundle's form. */
        private void tensor(Field t, boolean initializer) throws Refused {
            List<String[]> entries = new ArrayList<>();
            boolean external = false;
            boolean raw = false;
            List<Field> fs = message(t);
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
                throw new Refused("a tensor outside the initializers keeps its data outside the graph");
            }
            if (!external || raw || entries.size() != 3 || !entries.get(0)[0].equals("location")
                    || !entries.get(1)[0].equals("offset") || !entries.get(2)[0].equals("length")) {
                throw new Refused("an initializer's external data is not exactly location, offset, length");
            }
            String offset = entries.get(1)[1];
            String length = entries.get(2)[1];
            if (!entries.get(0)[1].equals(WEIGHTS_LOCATION) || !number(offset) || !number(length)) {
                throw new Refused("an initializer's external data is not the weights placeholder at " + DIGITS
                        + "-digit offset and length");
            }
            BigInteger start = new BigInteger(offset);
            BigInteger size = new BigInteger(length);
            ends.add(start.add(size));
            refs.add(describe(fs, start.min(BigInteger.valueOf(Long.MAX_VALUE)).longValue(),
                    size.min(BigInteger.valueOf(Long.MAX_VALUE)).longValue()));
        }

        private boolean number(String s) {
            return s.length() == DIGITS && s.chars().allMatch(c -> c >= '0' && c <= '9');
        }

        /** An external tensor's name, data type and dims, for an engine (never a reason to refuse). */
        private ExternalData describe(List<Field> fs, long offset, long length) {
            String name = "";
            int dataType = 0;
            List<Long> dims = new ArrayList<>();
            for (Field f : fs) {
                try {
                    if (f.number == 8 && f.wire == 2) {
                        name = text(f);
                    } else if (f.number == 2 && f.wire == 0) {
                        dataType = (int) f.value;
                    } else if (f.number == 1 && f.wire == 0) {
                        dims.add(f.value);
                    } else if (f.number == 1 && f.wire == 2) {  // packed
                        for (int[] pos = {f.a}; pos[0] < f.b; ) {
                            dims.add(varint(pos, f.b));
                        }
                    }
                } catch (Refused e) {
                    // unreadable: the engine will say so; the family has nothing against it
                }
            }
            return new ExternalData(name, dataType, dims.stream().mapToLong(Long::longValue).toArray(), offset, length);
        }

        private void node(Field n) throws Refused {
            List<Field> fs = message(n);
            String op = string(fs, 4);
            String domain = string(fs, 7);
            if (!ops.contains(domain + "\0" + op) && !ops.contains((domain.equals("ai.onnx") ? "" : domain) + "\0"
                    + op)) {
                throw new Refused("operator " + domain + "." + op + " is not one the encoder family uses");
            }
            for (Field attr : fs) {
                if (attr.number != 5) {
                    continue;
                }
                if (attr.wire != 2) {
                    throw new Refused("an attribute is not a message");
                }
                for (Field f : fields(attr.a, attr.b)) {
                    if (f.number == 6 || f.number == 11) {
                        throw new Refused("operator " + op + " has a subgraph attribute (control flow)");
                    } else if (f.number == 22 || f.number == 23) {
                        throw new Refused("operator " + op + " has a sparse tensor attribute");
                    } else if (f.number == 5 || f.number == 10) {
                        tensor(f, false);
                    }
                }
            }
            int position = 0;
            for (Field f : fs) {
                if (f.number != 1) {
                    continue;
                }
                if (f.wire == 2 && f.a == f.b && !optionalInput(domain.equals("ai.onnx") ? "" : domain, op, position)) {
                    throw new Refused("operator " + op + " leaves its input " + position + " out (an empty name), which "
                            + "the encoder family allows only where schema.json's onnx \"optional_inputs\" lists");
                }
                position++;
            }
        }

        private void graph(Field g) throws Refused {
            for (Field f : fields(g.a, g.b)) {
                if (f.number == 1 || f.number == 5 || f.number == 15) {
                    if (++nodes > ((Number) ONNX.get("max_nodes")).intValue()) {
                        throw new Refused("the graph has more nodes and initializers than the family allows");
                    }
                    if (f.wire != 2) {
                        throw new Refused("a graph entry is not a message");
                    }
                }
                if (f.number == 15) {
                    throw new Refused("the graph has a sparse initializer");
                } else if (f.number == 5) {
                    tensor(f, true);
                } else if (f.number == 1) {
                    node(f);
                }
            }
        }

        List<ExternalData> check(long weightsBytes) throws Refused {
            int graphs = 0;
            for (Field f : fields(base, end)) {
                if (f.number == 25 || f.number == 20) {
                    throw new Refused("the model defines functions or carries training graphs");
                }
                if (f.number == 8 || f.number == 7) {
                    if (f.wire != 2) {
                        throw new Refused("field " + f.number + " is not a message");
                    }
                }
                if (f.number == 8 && !((List<?>) ONNX.get("domains")).contains(string(fields(f.a, f.b), 1))) {
                    throw new Refused("an operator set domain is not one the encoder family uses");
                }
                if (f.number == 7) {
                    graphs++;
                    graph(f);
                }
            }
            if (graphs != 1) {
                throw new Refused("it has " + graphs + " graphs, not one");
            }
            for (BigInteger last : ends) {
                if (last.compareTo(BigInteger.valueOf(weightsBytes)) > 0) {
                    throw new Refused("an initializer's external data ends past encoder.weights");
                }
            }
            return Collections.unmodifiableList(refs);
        }
    }

    // ------------------------------------------------------------------ TFLite (flatbuffer)

    /** Bounds-checked reads of a flatbuffer (schema.fbs field indices). */
    private static final class Flat {
        final ByteBuffer b;
        final long n;
        /** Bytes of strings and index vectors read so far: shared ones may not make the walk read more than the model. */
        long read;

        Flat(ByteBuffer b) {
            this.b = b;
            this.n = b.limit();
        }

        long u(int size, long pos) throws Refused {
            if (pos < 0 || pos > n - size) {
                throw new Refused("an offset outside the model's bytes");
            }
            int p = (int) pos;
            return size == 1 ? b.get(p) & 0xffL : size == 2 ? b.getShort(p) & 0xffffL
                    : size == 4 ? b.getInt(p) & 0xffffffffL : b.getLong(p);
        }

        /** Absolute position of a table's field, -1 when absent. */
        long field(long table, int index) throws Refused {
            long vtable = table - (int) u(4, table);
            long vsize = u(2, vtable);
            if (vsize < 4 || vsize % 2 != 0) {
                throw new Refused("a vtable of size " + vsize);
            }
            if (4 + 2L * index >= vsize) {
                return -1;
            }
            long rel = u(2, vtable + 4 + 2L * index);
            return rel == 0 ? -1 : table + rel;
        }

        long ref(long pos) throws Refused {
            return pos + u(4, pos);
        }

        /** An int32 vector field (empty when absent); like strings, shared vectors may not make the walk read more than the model. */
        int[] ints(long table, int index) throws Refused {
            long at = field(table, index);
            if (at < 0) {
                return new int[0];
            }
            long vec = ref(at);
            long length = u(4, vec);
            if (length > Math.floorDiv(n - vec - 4, 4)) {
                throw new Refused("a vector declares more elements than its bytes hold");
            }
            read += 4 * length;
            if (read > n) {
                throw new Refused("its names and index vectors add up to more bytes than the model has");
            }
            int[] out = new int[(int) length];
            for (int i = 0; i < out.length; i++) {
                out[i] = b.getInt((int) (vec + 4 + 4L * i));
            }
            return out;
        }

        long scalar(long table, int index, int size, boolean signed) throws Refused {
            long at = field(table, index);
            long v = at < 0 ? 0 : u(size, at);
            return !signed ? v : size == 1 ? (byte) v : (int) v;
        }

        List<Long> tables(long table, int index, long most) throws Refused {
            long at = field(table, index);
            if (at < 0) {
                return Collections.emptyList();
            }
            long vec = ref(at);
            long length = u(4, vec);
            if (length > Math.floorDiv(n - vec - 4, 4)) {
                throw new Refused("a vector declares more elements than its bytes hold");
            }
            if (length > most) {
                throw new Refused("a vector of " + length + " tables, more than the family allows");
            }
            List<Long> out = new ArrayList<>();
            for (long i = 0; i < length; i++) {
                out.add(ref(vec + 4 + 4 * i));
            }
            return out;
        }

        ByteBuffer string(long table, int index) throws Refused {
            long at = field(table, index);
            if (at < 0) {
                return null;
            }
            long s = ref(at);
            long length = u(4, s);
            read += length;
            if (read > n || length > n - s - 4) {
                throw new Refused("a string runs past the model's bytes");
            }
            ByteBuffer d = b.duplicate();
            d.position((int) s + 4).limit((int) (s + 4 + length));
            return d.slice();
        }

        void name(long table, int index, String what) throws Refused {
            ByteBuffer raw = string(table, index);
            if (raw != null) {
                utf8(raw, what);
            }
        }
    }

    /** The name of a TFLite builtin operator code of the family (null if it is not one). */
    private static String tfliteName(long code) {
        for (Map.Entry<?, ?> e : ((Map<?, ?>) TFLITE.get("ops")).entrySet()) {
            if (((Number) e.getValue()).longValue() == code) {
                return (String) e.getKey();
            }
        }
        return null;
    }

    /**
     * Each index names one of the subgraph's {@code tensors}, or is -1 at a position schema.json's
     * "optional_inputs" lists for the operator {@code op} (null: none may be left out). LiteRT hands
     * an omitted input to the kernel, and a kernel that needs it reads memory that is not a tensor.
     */
    private static void tensorIndices(int[] indices, int tensors, String op, String what) throws Refused {
        Map<?, ?> optional = (Map<?, ?>) TFLITE.get("optional_inputs");
        for (int position = 0; position < indices.length; position++) {
            int i = indices[position];
            if (i == -1 && op != null && optional.containsKey(op)) {
                boolean allowed = false;
                for (Object p : (List<?>) optional.get(op)) {
                    allowed |= ((Number) p).intValue() == position;
                }
                if (allowed) {
                    continue;
                }
            }
            if (i == -1) {
                throw new Refused(what + " " + position + " is left out (-1), which the encoder family allows only for "
                        + "the optional inputs of schema.json's \"optional_inputs\"");
            }
            if (i < 0 || i >= tensors) {
                throw new Refused(what + " " + position + " names tensor " + i + " of " + tensors);
            }
        }
    }

    /** None of the fields of {@code kind} (a schema.fbs table) the family's encoders never write (schema.json "absent_fields"). */
    private static void absent(Flat fb, long table, String kind) throws Refused {
        for (Map.Entry<?, ?> e : ((Map<?, ?>) ((Map<?, ?>) TFLITE.get("absent_fields")).get(kind)).entrySet()) {
            if (fb.field(table, ((Number) e.getValue()).intValue()) >= 0) {
                throw new Refused("one of its " + kind + " tables has the field " + e.getKey() + ", which the encoder family does not use");
            }
        }
    }

    private static void tflite(Flat fb) throws Refused {
        if (fb.n < 8) {
            throw new Refused("too few bytes for a flatbuffer");
        }
        int most = ((Number) TFLITE.get("max_operators")).intValue();
        long root = fb.u(4, 0);
        List<Long> codes = new ArrayList<>();
        for (long oc : fb.tables(root, 1, tflite("max_operator_codes"))) {
            if (fb.string(oc, 1) != null) {
                throw new Refused("it uses a custom operator");
            }
            long code = Math.max(fb.scalar(oc, 0, 1, true), fb.scalar(oc, 3, 4, true));
            if (!((Map<?, ?>) TFLITE.get("ops")).containsValue(code)) {
                throw new Refused("builtin operator code " + code + " is not one the encoder family uses");
            }
            codes.add(code);
        }
        List<Long> subgraphs = fb.tables(root, 2, tflite("max_subgraphs"));
        if (subgraphs.size() != 1) {
            throw new Refused("it has " + subgraphs.size() + " subgraphs; the encoder family has one");
        }
        long sg = subgraphs.get(0);
        List<Long> tensors = fb.tables(sg, 0, 2L * most);
        for (long t : tensors) {
            fb.name(t, 3, "a tensor name");
            absent(fb, t, "Tensor");
        }
        tensorIndices(fb.ints(sg, 1), tensors.size(), null, "the subgraph's input");
        tensorIndices(fb.ints(sg, 2), tensors.size(), null, "the subgraph's output");
        for (long op : fb.tables(sg, 3, most)) {
            long index = fb.scalar(op, 0, 4, false);
            if (index >= codes.size()) {
                throw new Refused("an operator names an operator code that is not there");
            }
            String name = tfliteName(codes.get((int) index));
            absent(fb, op, "Operator");
            tensorIndices(fb.ints(op, 1), tensors.size(), name, name + "'s input");
            tensorIndices(fb.ints(op, 2), tensors.size(), null, name + "'s output");
        }
        for (long buffer : fb.tables(root, 4, 2L * most + 1)) {
            if (fb.scalar(buffer, 1, 8, false) != 0 || fb.scalar(buffer, 2, 8, false) != 0) {
                throw new Refused("a buffer is stored outside the flatbuffer");
            }
        }
        for (long sig : fb.tables(root, 7, tflite("max_signatures"))) {
            fb.name(sig, 2, "a signature key");
            for (int index = 0; index < 2; index++) {
                for (long tm : fb.tables(sig, index, tflite("max_signature_tensors"))) {
                    fb.name(tm, 0, "a signature tensor name");
                }
            }
        }
    }
}
