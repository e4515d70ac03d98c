package org.dpedge.core;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The Java core's answers to a folder of questions from tests/fuzz/reader_agreement.py (the
 * differential fuzzing of the three readers): per bundle its refusal (code, path) or its labels,
 * token ids, hasToken and scores; per string the text rules. Writes answers-java.json beside
 * questions.json. Run by {@code run-tests.sh --answers DIR}; not a test itself.
 */
public final class Answers {
    private Answers() {
    }

    public static void main(String[] args) throws Exception {
        File dir = new File(args[0]);
        String text = new String(Files.readAllBytes(new File(dir, "questions.json").toPath()), StandardCharsets.UTF_8);
        Map<String, Object> q = Contract.cast(Json.parse(text, 64, Long.MAX_VALUE));
        List<String> texts = Contract.cast(q.get("texts"));
        List<Object> bundles = new ArrayList<>();
        for (Object o : (List<?>) q.get("bundles")) {
            bundles.add(bundle(dir, Contract.cast(o), texts));
        }
        List<Object> strings = new ArrayList<>();
        for (Object o : (List<?>) q.get("strings")) {
            strings.add(rules((String) o));
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("bundles", bundles);
        out.put("strings", strings);
        File tmp = new File(dir, "answers-java.json.tmp");
        Files.write(tmp.toPath(), write(out).getBytes(StandardCharsets.UTF_8));
        Files.move(tmp.toPath(), new File(dir, "answers-java.json").toPath(), StandardCopyOption.ATOMIC_MOVE);
    }

    private static Map<String, Object> bundle(File dir, Map<String, Object> row, List<String> shared) {
        Map<String, Object> a = new LinkedHashMap<>();
        Bundle b;
        try {
            Object pack = row.get("pack");  // the encoder pack given with the bundle (format 1.1), or null
            b = pack == null ? BundleReader.read(new File(dir, (String) row.get("file")))
                    : BundleReader.read(new File(dir, (String) row.get("file")), BundleReader.readPack(new File((String) pack)));
        } catch (BundleException e) {
            a.put("code", e.code());
            a.put("path", e.path());
            return a;
        }
        List<String> texts = new ArrayList<>(shared);
        texts.addAll(Contract.cast(row.get("texts")));
        Tokenizer tok = b.encoder().tokenizer();
        List<Object> ids = new ArrayList<>();
        List<Object> has = new ArrayList<>();
        for (String t : texts) {
            List<Object> one = new ArrayList<>();
            for (int id : tok.encode(t)) {
                one.add((long) id);
            }
            ids.add(one);
            has.add(tok.hasToken(t));
        }
        a.put("labels", new ArrayList<Object>(b.labels()));
        a.put("ids", ids);
        a.put("has", has);
        List<?> x = (List<?>) row.get("x");
        if (x != null) {
            List<Object> scores = new ArrayList<>();
            for (double s : new Scorer(b).scores(ConformanceTest.floats(x))) {
                scores.add(s);
            }
            a.put("scores", scores);
        }
        return a;
    }

    private static Map<String, Object> rules(String s) {
        Map<String, Object> a = new LinkedHashMap<>();
        a.put("escaped", Text.escape(s));
        a.put("escaped_json", Text.escapeJson(ConformanceTest.jsonDumps(s)));
        a.put("key", Text.labelKey(s));
        a.put("unprintable", Text.unprintable(s) < 0 ? null : (long) Text.unprintable(s));
        a.put("unassigned", Text.unassigned(s) < 0 ? null : (long) Text.unassigned(s));
        a.put("shows_something", Text.showsSomething(s));
        return a;
    }

    /** JSON of maps, lists, strings (every char outside printable ASCII as a u-escape: lossless), numbers, booleans, null. */
    static String write(Object v) {
        StringBuilder out = new StringBuilder();
        write(v, out);
        return out.toString();
    }

    private static void write(Object v, StringBuilder out) {
        if (v == null || v instanceof Boolean || v instanceof Long) {
            out.append(v);
        } else if (v instanceof Double) {
            double d = (Double) v;
            out.append(Double.isFinite(d) ? Double.toString(d) : Double.isNaN(d) ? "NaN" : d > 0 ? "Infinity" : "-Infinity");
        } else if (v instanceof String) {
            out.append('"');
            for (char c : ((String) v).toCharArray()) {
                if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
                    out.append(c);
                } else {
                    out.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
                }
            }
            out.append('"');
        } else if (v instanceof List) {
            out.append('[');
            String sep = "";
            for (Object x : (List<?>) v) {
                out.append(sep);
                write(x, out);
                sep = ",";
            }
            out.append(']');
        } else {
            out.append('{');
            String sep = "";
            for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
                out.append(sep);
                write(e.getKey(), out);
                out.append(':');
                write(e.getValue(), out);
                sep = ",";
            }
            out.append('}');
        }
    }
}
