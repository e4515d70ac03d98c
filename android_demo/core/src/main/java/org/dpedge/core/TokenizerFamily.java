package org.dpedge.core;

import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * The tokenizer family: a bundle's {@code tokenizer.json} must be a BERT WordPiece pipeline
 * (BertNormalizer, BertPreTokenizer, WordPiece, TemplateProcessing), with bounded sizes.
 *
 * <p>A port of the Python runtime's {@code runtime/bundle/tokenizer_family.py}, with the same
 * rules, in the same order, and the same messages: a tokenizer.json can describe normalizers
 * that grow a query exponentially or regexes that hang, and a phone must refuse exactly the
 * documents a laptop refuses (docs/bundle-format.md section 6).
 */
final class TokenizerFamily {
    static final String FIELD = "encoder.tokenizer_json";
    static final int MAX_TOKENIZER_JSON_CHARS = 16_000_000;
    static final int MAX_VOCAB_SIZE = 250_000;
    static final int MAX_TOKEN_CHARS = 100;
    static final int MAX_ADDED_TOKENS = 1000;
    static final int MAX_INPUT_CHARS_PER_WORD = 100;
    static final int MAX_PREFIX_CHARS = 8;
    static final int MAX_LENGTH = 8192;
    static final List<String> KEYS = Arrays.asList("version", "truncation", "padding", "added_tokens", "normalizer",
            "pre_tokenizer", "post_processor", "decoder", "model");
    static final List<String> REQUIRED = Arrays.asList("added_tokens", "normalizer", "pre_tokenizer",
            "post_processor", "model");

    /** Why a document is outside the family (becomes one BundleException). */
    private static final class Refused extends Exception {
        private static final long serialVersionUID = 1L;

        Refused(String why) {
            super(why);
        }
    }

    private TokenizerFamily() {
    }

    /** Refuses a tokenizer.json outside the family, naming the field and the JSON path. */
    static void check(String text) throws BundleException {
        int chars = text.codePointCount(0, text.length());
        if (chars > MAX_TOKENIZER_JSON_CHARS) {
            throw new BundleException("field '" + FIELD + "' has " + chars + " characters, more than "
                    + MAX_TOKENIZER_JSON_CHARS);
        }
        Object doc;
        try {
            doc = MiniJson.parse(text);
        } catch (MiniJson.DuplicateKey e) {
            throw new BundleException("field '" + FIELD + "' is outside the tokenizer family: key " + show(e.key)
                    + " appears twice in one object");
        } catch (IllegalArgumentException e) {
            throw new BundleException("field '" + FIELD + "' is not valid JSON: " + Text.escape(e.getMessage()));
        }
        try {
            checkDocument(doc);
        } catch (Refused e) {
            throw new BundleException("field '" + FIELD + "' is outside the tokenizer family: "
                    + Text.escape(e.getMessage()));
        }
    }

    private static void checkDocument(Object d) throws Refused {
        Map<?, ?> doc = map(d, "", KEYS, REQUIRED);
        if (doc.containsKey("version") && !"1.0".equals(doc.get("version"))) {
            throw new Refused("version is " + show(doc.get("version")) + ", expected \"1.0\"");
        }
        typed(doc.get("normalizer"), "normalizer", "BertNormalizer");
        List<String> nkeys = Arrays.asList("type", "clean_text", "handle_chinese_chars", "strip_accents", "lowercase");
        Map<?, ?> n = map(doc.get("normalizer"), "normalizer", nkeys, nkeys);
        for (String k : new String[] {"clean_text", "handle_chinese_chars", "lowercase"}) {
            bool(n.get(k), "normalizer." + k, false);
        }
        bool(n.get("strip_accents"), "normalizer.strip_accents", true);
        typed(doc.get("pre_tokenizer"), "pre_tokenizer", "BertPreTokenizer");
        map(doc.get("pre_tokenizer"), "pre_tokenizer", Arrays.asList("type"), Arrays.asList());
        Map<?, ?> vocab = checkModel(doc.get("model"));
        checkAddedTokens(doc.get("added_tokens"), vocab);
        checkPostProcessor(doc.get("post_processor"), vocab);
        Object decoder = doc.get("decoder");
        if (decoder != null) {
            typed(decoder, "decoder", "WordPiece");
            List<String> dkeys = Arrays.asList("type", "prefix", "cleanup");
            Map<?, ?> dm = map(decoder, "decoder", dkeys, dkeys);
            str(dm.get("prefix"), "decoder.prefix", 1, MAX_PREFIX_CHARS);
            bool(dm.get("cleanup"), "decoder.cleanup", false);
        }
        checkSettings(doc);
    }

    private static Map<?, ?> checkModel(Object v) throws Refused {
        typed(v, "model", "WordPiece");
        List<String> keys = Arrays.asList("type", "unk_token", "continuing_subword_prefix", "max_input_chars_per_word",
                "vocab");
        Map<?, ?> m = map(v, "model", keys, keys);
        Object vocabV = m.get("vocab");
        if (!(vocabV instanceof Map) || ((Map<?, ?>) vocabV).isEmpty() || ((Map<?, ?>) vocabV).size() > MAX_VOCAB_SIZE) {
            throw new Refused("model.vocab must be an object of 1 to " + MAX_VOCAB_SIZE + " tokens");
        }
        Map<?, ?> vocab = (Map<?, ?>) vocabV;
        Set<Long> ids = new HashSet<>();
        for (Map.Entry<?, ?> e : vocab.entrySet()) {
            String token = (String) e.getKey();
            int len = token.codePointCount(0, token.length());
            if (len < 1 || len > MAX_TOKEN_CHARS) {
                throw new Refused("model.vocab token " + show(token) + " must have 1 to " + MAX_TOKEN_CHARS
                        + " characters");
            }
            Object i = e.getValue();
            if (!(i instanceof Long) || (Long) i < 0 || (Long) i >= vocab.size()) {
                throw new Refused("model.vocab id of " + show(token) + " must be an integer in 0.." + (vocab.size() - 1)
                        + ", got " + show(i));
            }
            ids.add((Long) i);
        }
        if (ids.size() != vocab.size()) {
            throw new Refused("model.vocab must give every token its own id (ids 0 to size - 1, each once)");
        }
        String unk = str(m.get("unk_token"), "model.unk_token", 1, MAX_TOKEN_CHARS);
        if (!vocab.containsKey(unk)) {
            throw new Refused("model.unk_token " + show(unk) + " is not in model.vocab");
        }
        str(m.get("continuing_subword_prefix"), "model.continuing_subword_prefix", 1, MAX_PREFIX_CHARS);
        integer(m.get("max_input_chars_per_word"), "model.max_input_chars_per_word", 1, MAX_INPUT_CHARS_PER_WORD);
        return vocab;
    }

    private static void checkAddedTokens(Object v, Map<?, ?> vocab) throws Refused {
        if (!(v instanceof List) || ((List<?>) v).size() > MAX_ADDED_TOKENS) {
            throw new Refused("added_tokens must be a list of at most " + MAX_ADDED_TOKENS + " tokens");
        }
        List<String> keys = Arrays.asList("id", "content", "single_word", "lstrip", "rstrip", "normalized", "special");
        List<?> tokens = (List<?>) v;
        for (int i = 0; i < tokens.size(); i++) {
            String where = "added_tokens[" + i + "]";
            Map<?, ?> t = map(tokens.get(i), where, keys, keys);
            String content = str(t.get("content"), where + ".content", 1, MAX_TOKEN_CHARS);
            Object id = t.get("id");
            if (!(id instanceof Long) || !id.equals(vocab.get(content))) {
                throw new Refused(where + " must be a token of model.vocab with its id, got " + show(content)
                        + " with id " + show(id));
            }
            for (String k : keys.subList(2, keys.size())) {
                bool(t.get(k), where + "." + k, false);
            }
        }
    }

    private static void checkPostProcessor(Object v, Map<?, ?> vocab) throws Refused {
        typed(v, "post_processor", "TemplateProcessing");
        Map<?, ?> pp = map(v, "post_processor", Arrays.asList("type", "single", "pair", "special_tokens"),
                Arrays.asList("type", "single", "special_tokens"));
        Object specialsV = pp.get("special_tokens");
        if (!(specialsV instanceof Map) || ((Map<?, ?>) specialsV).isEmpty() || ((Map<?, ?>) specialsV).size() > 8) {
            throw new Refused("post_processor.special_tokens must be an object of 1 to 8 tokens");
        }
        Map<?, ?> specials = (Map<?, ?>) specialsV;
        for (Map.Entry<?, ?> e : specials.entrySet()) {
            String name = (String) e.getKey();
            String at = "post_processor.special_tokens." + name;
            List<String> keys = Arrays.asList("id", "ids", "tokens");
            Map<?, ?> st = map(e.getValue(), at, keys, keys);
            Object id = vocab.get(name);
            if (!name.equals(st.get("id")) || !Arrays.asList(name).equals(st.get("tokens")) || id == null
                    || !Arrays.asList(id).equals(st.get("ids"))) {
                throw new Refused(at + " must be {\"id\": " + show(name) + ", \"ids\": [its vocabulary id], "
                        + "\"tokens\": [" + show(name) + "]} with " + show(name) + " in model.vocab");
            }
        }
        template(pp.get("single"), "post_processor.single", specials, true);
        if (pp.containsKey("pair")) {
            template(pp.get("pair"), "post_processor.pair", specials, false);
        }
    }

    private static void template(Object v, String where, Map<?, ?> specials, boolean single) throws Refused {
        if (!(v instanceof List) || ((List<?>) v).isEmpty() || ((List<?>) v).size() > 8) {
            throw new Refused(where + " must be a list of 1 to 8 pieces");
        }
        List<?> items = (List<?>) v;
        StringBuilder kinds = new StringBuilder();
        boolean allZero = true;
        for (int i = 0; i < items.size(); i++) {
            String at = where + "[" + i + "]";
            Object piece = items.get(i);
            if (!(piece instanceof Map) || ((Map<?, ?>) piece).size() != 1) {
                throw new Refused(at + " must be {\"SpecialToken\": ...} or {\"Sequence\": ...}, got " + show(piece));
            }
            Map.Entry<?, ?> only = ((Map<?, ?>) piece).entrySet().iterator().next();
            String kind = (String) only.getKey();
            List<String> keys = Arrays.asList("id", "type_id");
            Map<?, ?> body;
            if (kind.equals("SpecialToken")) {
                body = map(only.getValue(), at + ".SpecialToken", keys, keys);
                if (!specials.containsKey(body.get("id"))) {
                    throw new Refused(at + ".SpecialToken.id " + show(body.get("id"))
                            + " is not in post_processor.special_tokens");
                }
                kinds.append("S");
            } else if (kind.equals("Sequence")) {
                body = map(only.getValue(), at + ".Sequence", keys, keys);
                if (!"A".equals(body.get("id")) && !"B".equals(body.get("id"))) {
                    throw new Refused(at + ".Sequence.id must be \"A\" or \"B\", got " + show(body.get("id")));
                }
                kinds.append(body.get("id"));
            } else {
                throw new Refused(at + " must be {\"SpecialToken\": ...} or {\"Sequence\": ...}, got " + show(kind));
            }
            allZero &= integer(body.get("type_id"), at + "." + kind + ".type_id", 0, 1) == 0;
        }
        if (single && (!kinds.toString().equals("SAS") || !allZero)) {
            throw new Refused(where + " must be [SpecialToken, Sequence A, SpecialToken] with type_id 0 (BERT's [CLS] A "
                    + "[SEP])");
        }
    }

    private static void checkSettings(Map<?, ?> doc) throws Refused {
        Object t = doc.get("truncation");
        if (t != null) {
            Map<?, ?> tm = map(t, "truncation", Arrays.asList("direction", "max_length", "strategy", "stride"),
                    Arrays.asList("max_length"));
            integer(tm.get("max_length"), "truncation.max_length", 0, MAX_LENGTH);
            if (tm.containsKey("stride")) {
                integer(tm.get("stride"), "truncation.stride", 0, MAX_LENGTH);
            }
            for (String k : new String[] {"direction", "strategy"}) {
                if (tm.containsKey(k)) {
                    str(tm.get(k), "truncation." + k, 1, 32);
                }
            }
        }
        Object p = doc.get("padding");
        if (p != null) {
            Map<?, ?> pm = map(p, "padding", Arrays.asList("strategy", "direction", "pad_to_multiple_of", "pad_id",
                    "pad_type_id", "pad_token"), Arrays.asList());
            Object strategy = pm.get("strategy");
            boolean ok = "BatchLongest".equals(strategy);
            if (!ok && strategy instanceof Map && ((Map<?, ?>) strategy).keySet().equals(new HashSet<>(
                    Arrays.asList("Fixed")))) {
                integer(((Map<?, ?>) strategy).get("Fixed"), "padding.strategy.Fixed", 0, MAX_LENGTH);
                ok = true;
            }
            if (!ok) {
                throw new Refused("padding.strategy must be \"BatchLongest\" or {\"Fixed\": n}, got " + show(strategy));
            }
            if (pm.get("pad_to_multiple_of") != null) {
                integer(pm.get("pad_to_multiple_of"), "padding.pad_to_multiple_of", 1, MAX_LENGTH);
            }
            for (String k : new String[] {"pad_id", "pad_type_id"}) {
                if (pm.containsKey(k)) {
                    integer(pm.get(k), "padding." + k, 0, MAX_VOCAB_SIZE);
                }
            }
            for (String k : new String[] {"direction", "pad_token"}) {
                if (pm.containsKey(k)) {
                    str(pm.get(k), "padding." + k, 1, MAX_TOKEN_CHARS);
                }
            }
        }
    }

    // ------------------------------------------------------------------ helpers (Python's)

    private static Map<?, ?> map(Object v, String where, List<String> keys, List<String> required) throws Refused {
        if (!(v instanceof Map)) {
            throw new Refused(where + " must be an object, got " + show(v));
        }
        Map<?, ?> m = (Map<?, ?>) v;
        for (String k : required) {
            if (!m.containsKey(k)) {
                throw new Refused(where.isEmpty() ? "missing '" + k + "'" : "missing '" + where + "." + k + "'");
            }
        }
        TreeSet<String> extra = new TreeSet<>();
        for (Object k : m.keySet()) {
            if (!keys.contains(k)) {
                extra.add((String) k);
            }
        }
        if (!extra.isEmpty()) {
            throw new Refused(where.isEmpty() ? "'" + extra.first() + "' is not part of the family"
                    : where + "." + extra.first() + " is not part of the family");
        }
        return m;
    }

    private static void typed(Object v, String where, String expected) throws Refused {
        Object got = v instanceof Map ? ((Map<?, ?>) v).get("type") : v;
        if (!(v instanceof Map) || !expected.equals(got)) {
            throw new Refused(where + ".type is " + show(got) + ", expected " + show(expected));
        }
    }

    private static void bool(Object v, String where, boolean nullable) throws Refused {
        if (!(v instanceof Boolean || nullable && v == null)) {
            throw new Refused(where + " must be " + (nullable ? "true, false or null" : "true or false") + ", got "
                    + show(v));
        }
    }

    private static long integer(Object v, String where, long low, long high) throws Refused {
        if (!(v instanceof Long) || (Long) v < low || (Long) v > high) {
            throw new Refused(where + " must be an integer in " + low + ".." + high + ", got " + show(v));
        }
        return (Long) v;
    }

    private static String str(Object v, String where, int low, int high) throws Refused {
        int len = v instanceof String ? ((String) v).codePointCount(0, ((String) v).length()) : -1;
        if (len < low || len > high) {
            throw new Refused(where + " must be a string of " + low + " to " + high + " characters, got " + show(v));
        }
        return (String) v;
    }

    /** Python's json.dumps(v, ensure_ascii=True), cut to 60 characters as the messages show it. */
    static String show(Object v) {
        String text = json(v);
        return text.length() <= 60 ? text : text.substring(0, 57) + "...";
    }

    private static String json(Object v) {
        if (v == null) {
            return "null";
        } else if (v instanceof Boolean) {
            return ((Boolean) v) ? "true" : "false";
        } else if (v instanceof Double) {
            double d = (Double) v;
            return Double.isNaN(d) ? "NaN" : Double.isInfinite(d) ? (d > 0 ? "Infinity" : "-Infinity")
                    : Text.pyFloat(d);
        } else if (v instanceof String) {
            StringBuilder sb = new StringBuilder("\"");
            String s = (String) v;
            for (int i = 0; i < s.length(); i++) {
                char c = s.charAt(i);
                switch (c) {
                    case '"': sb.append("\\\""); break;
                    case '\\': sb.append("\\\\"); break;
                    case '\n': sb.append("\\n"); break;
                    case '\r': sb.append("\\r"); break;
                    case '\t': sb.append("\\t"); break;
                    case '\b': sb.append("\\b"); break;
                    case '\f': sb.append("\\f"); break;
                    default:
                        if (c < 0x20 || c > 0x7e) {
                            sb.append(String.format(java.util.Locale.ROOT, "\\u%04x", (int) c));
                        } else {
                            sb.append(c);
                        }
                }
            }
            return sb.append('"').toString();
        } else if (v instanceof List) {
            StringBuilder sb = new StringBuilder("[");
            List<?> list = (List<?>) v;
            for (int i = 0; i < list.size() && sb.length() < 200; i++) {
                sb.append(i == 0 ? "" : ", ").append(json(list.get(i)));
            }
            return sb.append(']').toString();
        } else if (v instanceof Map) {
            StringBuilder sb = new StringBuilder("{");
            boolean first = true;
            for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
                if (sb.length() >= 200) {
                    break;
                }
                sb.append(first ? "" : ", ").append(json(e.getKey())).append(": ").append(json(e.getValue()));
                first = false;
            }
            return sb.append('}').toString();
        }
        return String.valueOf(v);
    }
}
