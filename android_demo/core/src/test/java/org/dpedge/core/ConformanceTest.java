package org.dpedge.core;

import static org.junit.Assert.assertTrue;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import org.junit.Test;

/**
 * The Java core against the conformance corpus (format/1/corpus/cases.json and the files beside
 * it): every refusal's code and path (of bundles, read with the case's encoder pack when it
 * names one, and of encoder packs), every accepted bundle's labels, token ids, scores and
 * labels, the engine cases end to end (a statistics bundle with its pack's encoder), and the
 * text rules. The corpus directory is the system
 * property {@code dpedge.corpus} (default format/1/corpus); a second corpus, such as one of the
 * real 384-d encoder ({@code python format/tools/make_corpus.py --real --out DIR}), is run too
 * when {@code dpedge.corpus.real} names it.
 *
 * <p>The JVM cannot run the native engines, so the end-to-end cases use a stand-in
 * {@link TextEncoder} that answers from the corpus (Python's onnxruntime standing in for the
 * app's engine): a query's embedding keyed by its token ids, and {@code check} for the check
 * text. Tokenizing, the query rules, the load check and scoring are the core's own.
 */
public class ConformanceTest {

    static List<File> corpora() {
        List<File> out = new ArrayList<>();
        String main = System.getProperty("dpedge.corpus", "");
        if (main.isEmpty()) {
            File here = new File("format/1/corpus");
            main = (here.isDirectory() ? here : new File("../../format/1/corpus")).getPath();
        }
        out.add(new File(main));
        String real = System.getProperty("dpedge.corpus.real", "");
        if (!real.isEmpty()) {
            out.add(new File(real));
        }
        return out;
    }

    static Map<String, Object> index(File corpus) throws Exception {
        String text = new String(Files.readAllBytes(new File(corpus, "cases.json").toPath()), StandardCharsets.UTF_8);
        return Contract.cast(Json.parse(text, 64, Long.MAX_VALUE));
    }

    static List<Map<String, Object>> rows(Map<String, Object> index, String key) {
        return Contract.cast(index.getOrDefault(key, List.of()));
    }

    static float[] floats(Object list) {
        List<?> l = (List<?>) list;
        float[] out = new float[l.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = ((Number) l.get(i)).floatValue();
        }
        return out;
    }

    static String key(Object tokenIds) {
        return Arrays.toString(Contract.ints(tokenIds));
    }

    /** Failures collected over a whole corpus, shown together (and the largest score difference seen). */
    static final class Failures {
        final List<String> lines = new ArrayList<>();
        double worstScore;

        void check(boolean ok, String what) {
            if (!ok) {
                lines.add(what);
            }
        }

        void done(String title) {
            assertTrue(title + ": " + lines.size() + " failures:\n  " + String.join("\n  ",
                    lines.subList(0, Math.min(40, lines.size()))), lines.isEmpty());
        }
    }

    /** The encoder pack a case gives the reader with its bundle (format 1.1), or null: none. */
    static EncoderPack pack(File corpus, Map<String, Object> c) throws BundleException {
        return c.containsKey("pack") ? BundleReader.readPack(new File(corpus, (String) c.get("pack"))) : null;
    }

    /** A case's refusal: the code and path expected, and the message escaped. */
    private static void refused(Failures f, Map<String, Object> c, BundleException e) {
        f.check(e.code().equals(c.get("code")) && e.path().equals(c.get("path")), c.get("file") + ": " + e.code()
                + " at '" + e.path() + "', expected " + c.get("code") + " at '" + c.get("path") + "' (" + e.getMessage()
                + ")");
        f.check(Text.unprintable(e.getMessage()) < 0, c.get("file") + ": message not escaped");
    }

    @Test
    public void numbersAreWrittenByTheContractsRule() throws Exception {
        for (File corpus : corpora()) {
            Failures f = new Failures();
            List<Map<String, Object>> cases = rows(index(corpus), "numbers");
            for (Map<String, Object> c : cases) {
                double v = ((Number) c.get("value")).doubleValue();
                f.check(Bundle.g10(v).equals(c.get("text")), v + ": " + Bundle.g10(v) + ", expected " + c.get("text"));
            }
            f.done(corpus + " numbers");
            System.out.println("conformance " + corpus + ": " + cases.size() + " numbers written");
        }
    }

    @Test
    public void theContractsArithmeticGivesTheCorpusBitsExactly() throws Exception {
        for (File corpus : corpora()) {
            Failures f = new Failures();
            List<Map<String, Object>> cases = rows(index(corpus), "arithmetic");
            for (Map<String, Object> c : cases) {
                List<?> args = (List<?>) c.get("args");
                if (args.size() != ("head_epsilon".equals(c.get("function")) ? 4 : 1)) {
                    f.check(false, c.get("function") + " " + args + ": wrong number of arguments");
                    continue;
                }
                double x = ((Number) args.get(0)).doubleValue();
                double got;
                switch ((String) c.get("function")) {
                    case "exp": got = ExactMath.exp(x); break;
                    case "log": got = ExactMath.log(x); break;
                    case "log1p": got = ExactMath.log1p(x); break;
                    case "expm1": got = ExactMath.expm1(x); break;
                    case "head_epsilon": got = Accountant.headEpsilon(x, ((Number) args.get(1)).doubleValue(),
                            ((Number) args.get(2)).longValue(), ((Number) args.get(3)).doubleValue()); break;
                    default: f.check(false, "unknown function " + c.get("function")); continue;
                }
                String bits = String.format("%016x", Double.doubleToRawLongBits(got));
                f.check(bits.equals(c.get("bits")), c.get("function") + " " + args + ": " + bits + " (" + got + "), expected "
                        + c.get("bits") + " (" + Double.longBitsToDouble(Long.parseUnsignedLong((String) c.get("bits"), 16))
                        + ")");
            }
            f.done(corpus + " arithmetic");
            System.out.println("conformance " + corpus + ": " + cases.size() + " arithmetic cases, bit for bit");
        }
    }

    @Test
    public void everyRefusedBundleIsRefusedWithItsCodeAndPath() throws Exception {
        for (File corpus : corpora()) {
            Failures f = new Failures();
            List<Map<String, Object>> cases = rows(index(corpus), "refuse");
            for (Map<String, Object> c : cases) {
                EncoderPack pack = pack(corpus, c);  // outside the try: the pack itself must be read
                try {
                    BundleReader.read(new File(corpus, (String) c.get("file")), pack);
                    f.check(false, c.get("file") + ": accepted, expected " + c.get("code") + " at " + c.get("path"));
                } catch (BundleException e) {
                    refused(f, c, e);
                }
            }
            f.done(corpus + " refuse");
            System.out.println("conformance " + corpus + ": " + cases.size() + " refused bundles");
        }
    }

    @Test
    public void everyRefusedPackIsRefusedWithItsCodeAndPath() throws Exception {
        for (File corpus : corpora()) {
            Failures f = new Failures();
            List<Map<String, Object>> cases = rows(index(corpus), "refuse_pack");
            for (Map<String, Object> c : cases) {
                List<String> expect = Contract.cast(c.get("expect"));
                try {
                    BundleReader.readPack(new File(corpus, (String) c.get("file")), expect);
                    f.check(false, c.get("file") + ": accepted as a pack, expected " + c.get("code") + " at "
                            + c.get("path"));
                } catch (BundleException e) {
                    refused(f, c, e);
                }
            }
            f.done(corpus + " refuse_pack");
            System.out.println("conformance " + corpus + ": " + cases.size() + " refused encoder packs");
        }
    }

    /** A stand-in engine: the corpus's embedding for the token ids it was given. */
    static TextEncoder standIn(Map<String, float[]> answers) {
        return ids -> {
            float[] emb = answers.get(Arrays.toString(ids));
            if (emb == null) {
                throw new IllegalStateException("the corpus has no embedding for token ids " + Arrays.toString(ids));
            }
            return emb.clone();
        };
    }

    private static void scores(Failures f, Scorer scorer, List<String> labels, Map<String, Object> row, double tol,
            String where) {
        double[] s = scorer.scores(floats(row.get("embedding")));
        List<?> want = (List<?>) row.get("scores");
        if (s.length != want.size()) {
            f.check(false, where + ": " + s.length + " scores, expected " + want.size());
            return;
        }
        double sum = 0;
        double worst = 0;
        String first = null;  // the first class whose score is off (tolerance 0: not the same value)
        for (int c = 0; c < s.length; c++) {
            double w = ((Number) want.get(c)).doubleValue();
            double diff = Math.abs(s[c] - w);
            worst = Math.max(worst, diff);
            if (first == null && !(diff <= tol)) {  // NaN is off too
                first = String.format(Locale.ROOT, "score of class %d (%s) is %s (%016x), expected %s (%016x): "
                        + "differs by %s, tolerance %s", c, Text.escape(labels.get(c)), Double.toString(s[c]),
                        Double.doubleToRawLongBits(s[c]), Double.toString(w), Double.doubleToRawLongBits(w),
                        Double.toString(diff), Double.toString(tol));
            }
            sum += s[c];
        }
        f.worstScore = Math.max(f.worstScore, worst);
        f.check(first == null, where + ": " + first);
        f.check(labels.get(Scorer.argmax(s)).equals(row.get("label")), where + ": label "
                + labels.get(Scorer.argmax(s)) + ", expected " + row.get("label"));
        f.check(Math.abs(sum - 1) <= 1e-9, where + ": scores sum to " + sum);
    }

    @Test
    public void everyAcceptedBundleIsReadTokenizedScoredAndRunAlike() throws Exception {
        for (File corpus : corpora()) {
            Failures f = new Failures();
            Map<String, Object> index = index(corpus);
            Map<?, ?> tol = (Map<?, ?>) index.get("tolerance");
            double scoreTol = ((Number) tol.get("scores")).doubleValue();
            double margin = ((Number) tol.get("label_margin")).doubleValue();
            int bundles = 0;
            int queries = 0;
            int endToEnd = 0;
            int vectors = 0;
            int loads = 0;
            for (Map<String, Object> c : rows(index, "accept")) {
                String file = (String) c.get("file");
                EncoderPack pack = pack(corpus, c);
                Bundle b;
                try {
                    b = BundleReader.read(new File(corpus, file), pack);
                } catch (BundleException e) {
                    f.check(false, file + ": refused with " + e.code() + " at '" + e.path() + "': " + e.getMessage());
                    continue;
                }
                bundles++;
                f.check(b.labels().equals(c.get("labels")), file + ": labels " + b.labels());
                f.check(pack == null ? b.encoderPack() == null : Arrays.equals(b.encoderPack(), pack.digest())
                        && b.encoder() == pack.encoder(), file + ": not scored with the encoder of its pack");
                Tokenizer tok = b.encoder().tokenizer();
                Scorer scorer = new Scorer(b);
                List<Map<String, Object>> qs = rows(c, "queries");
                for (Map<String, Object> q : qs) {
                    String text = (String) q.get("text");
                    String where = file + " " + Text.escape(text);
                    queries++;
                    if (q.containsKey("code")) {
                        f.check(!tok.hasToken(text), where + ": has a token");
                        continue;
                    }
                    f.check(Arrays.equals(tok.encode(text), Contract.ints(q.get("token_ids"))), where + ": token ids "
                            + Arrays.toString(tok.encode(text)) + ", expected " + q.get("token_ids"));
                    if (q.containsKey("embedding")) {
                        scores(f, scorer, b.labels(), q, scoreTol, where);
                    }
                }
                List<Map<String, Object>> vs = rows(c, "vectors");
                for (int i = 0; i < vs.size(); i++) {
                    scores(f, scorer, b.labels(), vs.get(i), scoreTol, file + " vector " + i);
                    vectors++;
                }
                if (c.get("engine") == null || !c.containsKey("check")) {
                    continue;
                }
                Map<String, float[]> answers = new HashMap<>();
                Map<?, ?> check = (Map<?, ?>) c.get("check");
                answers.put(key(check.get("token_ids")), floats(check.get("embedding")));
                for (Map<String, Object> q : qs) {
                    if (q.containsKey("embedding")) {
                        answers.put(key(q.get("token_ids")), floats(q.get("embedding")));
                    }
                }
                Map<?, ?> load = (Map<?, ?>) c.get("load");
                Classifier clf;
                try {
                    clf = new Classifier(b, standIn(answers));
                    f.check(load == null, file + ": loaded, expected " + load);
                } catch (BundleException e) {
                    f.check(load != null && e.code().equals(load.get("code")) && e.path().equals(load.get("path")),
                            file + ": refused at load with " + e.code() + " at " + e.path() + ": " + e.getMessage());
                    loads++;
                    continue;
                }
                try (Classifier closing = clf) {
                    for (Map<String, Object> q : qs) {
                        String where = file + " end to end " + Text.escape((String) q.get("text"));
                        endToEnd++;
                        try {
                            Prediction p = closing.classify((String) q.get("text"));
                            f.check(!q.containsKey("code"), where + ": classified, expected " + q.get("code"));
                            if (!q.containsKey("code") && ((Number) q.get("margin")).doubleValue() > margin) {
                                f.check(p.label().equals(q.get("label")), where + ": label " + p.label());
                            }
                        } catch (QueryException e) {
                            f.check(e.code().equals(q.get("code")), where + ": refused with " + e.code() + ": "
                                    + e.getMessage());
                        }
                    }
                }
            }
            f.done(corpus + " accept");
            System.out.println(String.format(Locale.ROOT, "conformance %s: %d accepted bundles (%d refused at load), "
                    + "%d queries tokenized, %d end to end, %d vectors scored (%s)", corpus, bundles, loads, queries,
                    endToEnd, vectors, scoreTol == 0 ? "scores bit for bit" : String.format(Locale.ROOT,
                    "scores within %.1e, tolerance %.1e", f.worstScore, scoreTol)));
        }
    }

    /** Python's json.dumps(s, ensure_ascii=False). */
    static String jsonDumps(String s) {
        StringBuilder out = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            int i = "\"\\\b\f\n\r\t".indexOf(c);
            if (i >= 0) {
                out.append('\\').append("\"\\bfnrt".charAt(i));
            } else if (c < 0x20) {
                out.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
            } else {
                out.append(c);
            }
        }
        return out.append('"').toString();
    }

    private static int codePoint(Object v) {
        return v == null ? -1 : ((Number) v).intValue();
    }

    @Test
    public void theTextRulesAgree() throws Exception {
        for (File corpus : corpora()) {
            Failures f = new Failures();
            List<Map<String, Object>> cases = rows(index(corpus), "text");
            for (Map<String, Object> row : cases) {
                String t = (String) row.get("text");
                String where = Text.escape(t);
                f.check(Text.escape(t).equals(row.get("escaped")), where + ": escape " + Text.escape(t));
                f.check(Text.escapeJson(jsonDumps(t)).equals(row.get("escaped_json")), where + ": escape_json "
                        + Text.escapeJson(jsonDumps(t)));
                f.check(Text.labelKey(t).equals(row.get("key")), where + ": key " + Text.escape(Text.labelKey(t)));
                f.check(Text.unprintable(t) == codePoint(row.get("unprintable")), where + ": unprintable");
                f.check(Text.unassigned(t) == codePoint(row.get("unassigned")), where + ": unassigned");
                f.check(Text.showsSomething(t) == (Boolean) row.get("shows_something"), where + ": shows_something");
            }
            f.done(corpus + " text");
            System.out.println("conformance " + corpus + ": " + cases.size() + " text cases");
        }
    }
}
