package org.dpedge.core;

import java.math.BigInteger;
import java.util.List;
import java.util.Map;

/**
 * Typed access to one parsed msgpack map, naming the dotted path of whatever is wrong.
 *
 * <p>Why: every field check in the Python reader goes through one helper ({@code _Fields} in
 * {@code runtime/bundle.py}) so that messages read the same everywhere ("missing field
 * 'lsh.hyperplanes'", "field 'labels' is string, expected array"). This is its twin, so the
 * two readers word their errors alike and the conformance tests can match phrases.
 */
final class Fields {
    /** The msgpack types a field may be declared as. */
    enum Kind {
        MAP("map"), ARRAY("array"), BIN("bin"), STRING("string"), INTEGER("integer"), FLOAT("float"),
        BOOLEAN("boolean");

        final String msgpackName;

        Kind(String msgpackName) {
            this.msgpackName = msgpackName;
        }

        boolean matches(Object v) {
            switch (this) {
                case MAP: return v instanceof Map;
                case ARRAY: return v instanceof List;
                case BIN: return v instanceof Msgpack.Bin;
                case STRING: return v instanceof String;
                case INTEGER: return v instanceof Long || v instanceof BigInteger;  // never a boolean
                case FLOAT: return v instanceof Double;
                case BOOLEAN: return v instanceof Boolean;
                default: return false;
            }
        }
    }

    final Map<String, Object> m;
    final String path;

    @SuppressWarnings("unchecked")
    Fields(Object m, String path) throws BundleException {
        if (!(m instanceof Map)) {
            throw new BundleException("field '" + path + "' must be a map, got " + Msgpack.typeName(m));
        }
        this.m = (Map<String, Object>) m;
        this.path = path;
    }

    String where(String key) {
        return path.isEmpty() ? key : path + "." + key;
    }

    /** A required field of one of the given kinds. */
    Object get(String key, Kind... kinds) throws BundleException {
        return get(key, false, kinds);
    }

    /** An optional field: null when absent or nil. */
    Object optional(String key, Kind... kinds) throws BundleException {
        return get(key, true, kinds);
    }

    private Object get(String key, boolean optional, Kind... kinds) throws BundleException {
        if (!m.containsKey(key)) {
            if (optional) {
                return null;
            }
            throw new BundleException("missing field '" + where(key) + "'");
        }
        Object v = m.get(key);
        if (v == null && optional) {
            return null;
        }
        for (Kind k : kinds) {
            if (k.matches(v)) {
                return v;
            }
        }
        StringBuilder expected = new StringBuilder();
        for (Kind k : kinds) {
            expected.append(expected.length() == 0 ? "" : " or ").append(k.msgpackName);
        }
        throw new BundleException("field '" + where(key) + "' is " + Msgpack.typeName(v) + ", expected " + expected);
    }

    String string(String key) throws BundleException {
        return (String) get(key, Kind.STRING);
    }

    /** An integer field: a Long, or a BigInteger above Long.MAX_VALUE. */
    Object integer(String key) throws BundleException {
        return get(key, Kind.INTEGER);
    }

    Fields sub(String key) throws BundleException {
        return new Fields(get(key, Kind.MAP), where(key));
    }

    // ------------------------------------------------------------------ integer helpers

    /** Whether an integer value (Long or BigInteger) lies in [lo, hi]. */
    static boolean inRange(Object integer, long lo, long hi) {
        if (integer instanceof Long) {
            long v = (Long) integer;
            return v >= lo && v <= hi;
        }
        return false;  // a BigInteger is above Long.MAX_VALUE
    }

    /** Whether an integer value (Long or BigInteger) equals {@code x}. */
    static boolean isEqual(Object integer, long x) {
        return integer instanceof Long && (Long) integer == x;
    }

    /** A numeric value (integer or float) as a double, like Python's {@code float(v)}. */
    static double toDouble(Object number) {
        if (number instanceof BigInteger) {
            return ((BigInteger) number).doubleValue();
        }
        return ((Number) number).doubleValue();
    }
}
