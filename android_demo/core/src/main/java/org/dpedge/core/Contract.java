package org.dpedge.core;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;

/**
 * The contract's files, read once from the classpath: format/1/schema.json (the format as
 * data) and format/1/unicode.json (the Unicode tables), under {@code org/dpedge/format/1/}.
 * Every rule the core applies comes from them; the core restates none.
 */
final class Contract {
    static final String FOLDER = "/org/dpedge/format/1/";
    static final Map<String, Object> SCHEMA = load("schema.json");

    private Contract() {
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> load(String name) {
        try (InputStream in = Contract.class.getResourceAsStream(FOLDER + name)) {
            if (in == null) {
                throw new IllegalStateException("the dpedge format file " + FOLDER + name + " is not on the classpath "
                        + "(build the core with format/1/ as resources)");
            }
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            byte[] buffer = new byte[1 << 16];
            for (int n; (n = in.read(buffer)) > 0; ) {
                out.write(buffer, 0, n);
            }
            return cast(Json.parse(new String(out.toByteArray(), StandardCharsets.UTF_8), 64, Long.MAX_VALUE));
        } catch (IOException | Json.Invalid e) {
            throw new IllegalStateException("cannot read the dpedge format file " + name + ": " + e.getMessage(), e);
        }
    }

    /** The value at a dotted path of schema.json (each part a map key). */
    static Object get(String dotted) {
        Object node = SCHEMA;
        for (String key : dotted.split("\\.")) {
            node = ((Map<?, ?>) node).get(key);
        }
        return node;
    }

    static long integer(String dotted) {
        return ((Number) get(dotted)).longValue();
    }

    static double number(String dotted) {
        return ((Number) get(dotted)).doubleValue();
    }

    static String string(String dotted) {
        return (String) get(dotted);
    }

    static List<Object> list(String dotted) {
        return cast(get(dotted));
    }

    static Map<String, Object> map(String dotted) {
        return cast(get(dotted));
    }

    @SuppressWarnings("unchecked")
    static <T> T cast(Object v) {
        return (T) v;
    }

    /** A JSON list of integers as an int array. */
    static int[] ints(Object list) {
        List<?> l = (List<?>) list;
        int[] out = new int[l.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = ((Number) l.get(i)).intValue();
        }
        return out;
    }
}
