package org.dpedge.core;

import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The tokenizer family (docs/bundle-format.md section 6): a bundle's tokenizer.json is strict
 * JSON ({@link Json}; else {@code tokenizer.json}) of one closed shape, given as data by
 * schema.json "tokenizer" (a document schema, its definitions and named relations) and
 * interpreted here; a document outside it is refused with {@code tokenizer.family} at
 * {@code encoder.tokenizer_json} followed by the JSON pointer of the first value refused.
 */
final class TokenizerFamily {
    static final String FIELD = "encoder.tokenizer_json";
    private static final Map<String, Object> T = Contract.map("tokenizer");

    /** Internal: where and why the document is outside the family. */
    private static final class Refused extends Exception {
        private static final long serialVersionUID = 1L;
        final String at;

        Refused(String at, String why) {
            super(why);
            this.at = at;
        }
    }

    private TokenizerFamily() {
    }

    /** The parsed document, if it is strict JSON inside the family. */
    static Map<String, Object> check(String text) throws BundleException {
        Object doc;
        try {
            doc = Json.parse(text, ((Number) T.get("max_depth")).intValue(),
                    ((Number) T.get("max_integer")).longValue());
        } catch (Json.Invalid e) {
            throw new BundleException("tokenizer.json", FIELD, "field '" + FIELD + "' is not strict JSON: "
                    + e.getMessage());
        }
        try {
            walk(doc, Contract.cast(T.get("document")), "");
            relations(Contract.cast(doc));
        } catch (Refused e) {
            throw new BundleException("tokenizer.family", FIELD + e.at, "field '" + FIELD + "' is outside the "
                    + "tokenizer family: '" + e.at + "' " + e.getMessage());
        }
        return Contract.cast(doc);
    }

    /** A JSON pointer one level down (RFC 6901: ~ and / escaped). */
    static String pointer(String at, Object key) {
        return at + "/" + key.toString().replace("~", "~0").replace("/", "~1");
    }

    /** JSON's types as the reference sees them: an integer is not a float, a boolean not an integer. */
    private static boolean same(Object v, Object constant) {
        return v != null && v.getClass() == constant.getClass() && v.equals(constant);
    }

    /** v checked against one schema node; the order of the checks is normative. */
    private static void walk(Object v, Map<String, Object> s, String at) throws Refused {
        if (s.containsKey("ref")) {
            Map<String, Object> merged = new LinkedHashMap<>(Contract.<Map<String, Object>>cast(
                    Contract.<Map<String, Object>>cast(T.get("definitions")).get(s.get("ref"))));
            s.forEach((k, x) -> {
                if (!k.equals("ref")) {
                    merged.put(k, x);
                }
            });
            s = merged;
        }
        if (v == null) {
            if (Boolean.TRUE.equals(s.get("nullable"))) {
                return;
            }
            throw new Refused(at, "is null");
        }
        if (s.containsKey("one_of")) {
            for (Object alternative : (List<?>) s.get("one_of")) {
                try {
                    walk(v, Contract.cast(alternative), at);
                    return;
                } catch (Refused ignored) {
                    // the next form
                }
            }
            throw new Refused(at, "is none of the forms the family allows");
        }
        if (s.containsKey("tagged")) {  // an object whose key "tagged" names its form (a post-processor's "type")
            if (!(v instanceof Map)) {
                throw new Refused(at, "is not an object");
            }
            Map<?, ?> m = (Map<?, ?>) v;
            Object tag = s.get("tagged");
            Map<?, ?> forms = (Map<?, ?>) s.get("forms");
            if (!m.containsKey(tag)) {
                throw new Refused(pointer(at, tag), "is missing");
            }
            if (!(m.get(tag) instanceof String && forms.containsKey(m.get(tag)))) {
                throw new Refused(pointer(at, tag), "is not one of " + forms.keySet());
            }
            walk(v, Contract.cast(forms.get(m.get(tag))), at);
            return;
        }
        if (s.containsKey("const")) {
            if (!same(v, s.get("const"))) {
                throw new Refused(at, "is not " + s.get("const"));
            }
            return;
        }
        if (s.containsKey("enum")) {
            if (!(v instanceof String && ((List<?>) s.get("enum")).contains(v))) {
                throw new Refused(at, "is not one of " + s.get("enum"));
            }
            return;
        }
        String type = (String) s.get("type");
        if (type.equals("object") || type.equals("map")) {
            if (!(v instanceof Map)) {
                throw new Refused(at, "is not an object");
            }
            Map<?, ?> m = (Map<?, ?>) v;
            if (type.equals("object")) {
                Set<Object> known = new HashSet<>();
                for (Object pair : (List<?>) s.get("keys")) {
                    Object k = ((List<?>) pair).get(0);
                    known.add(k);
                    Map<?, ?> sub = (Map<?, ?>) ((List<?>) pair).get(1);
                    if (!m.containsKey(k) && !Boolean.TRUE.equals(sub.get("optional"))) {
                        throw new Refused(pointer(at, k), "is missing");
                    }
                }
                for (Object k : m.keySet()) {
                    if (!known.contains(k)) {
                        throw new Refused(pointer(at, k), "is not part of the family");
                    }
                }
                for (Object pair : (List<?>) s.get("keys")) {
                    Object k = ((List<?>) pair).get(0);
                    if (m.containsKey(k)) {
                        walk(m.get(k), Contract.cast(((List<?>) pair).get(1)), pointer(at, k));
                    }
                }
                return;
            }
            count(m.size(), s, at);
            List<?> keyLength = (List<?>) s.get("key_length");
            for (Map.Entry<?, ?> e : m.entrySet()) {
                int n = Text.length((String) e.getKey());
                if (n < ((Number) keyLength.get(0)).intValue() || n > ((Number) keyLength.get(1)).intValue()) {
                    throw new Refused(pointer(at, e.getKey()), "is a key of " + n + " characters");
                }
                walk(e.getValue(), Contract.cast(s.get("values")), pointer(at, e.getKey()));
            }
        } else if (type.equals("array")) {
            if (!(v instanceof List)) {
                throw new Refused(at, "is not an array");
            }
            List<?> l = (List<?>) v;
            count(l.size(), s, at);
            for (int i = 0; i < l.size(); i++) {
                walk(l.get(i), Contract.cast(s.get("items")), pointer(at, i));
            }
        } else if (type.equals("tuple")) {  // an array of exactly one value per schema node, in order
            if (!(v instanceof List)) {
                throw new Refused(at, "is not an array");
            }
            List<?> l = (List<?>) v;
            List<?> items = (List<?>) s.get("items");
            if (l.size() != items.size()) {
                throw new Refused(at, "has " + l.size() + " entries, expected " + items.size());
            }
            for (int i = 0; i < l.size(); i++) {
                walk(l.get(i), Contract.cast(items.get(i)), pointer(at, i));
            }
        } else if (type.equals("string")) {
            if (!(v instanceof String)) {
                throw new Refused(at, "is not a string");
            }
            int n = Text.length((String) v);
            if (n < ((Number) s.getOrDefault("min_length", 0)).intValue()
                    || (s.containsKey("max_length") && n > ((Number) s.get("max_length")).intValue())) {
                throw new Refused(at, "has " + n + " characters, outside its bounds");
            }
        } else if (type.equals("integer")) {
            if (!(v instanceof Long) || (Long) v < ((Number) s.get("min")).longValue()
                    || (Long) v > ((Number) s.get("max")).longValue()) {
                throw new Refused(at, "is not an integer from " + s.get("min") + " to " + s.get("max"));
            }
        } else if (type.equals("boolean")) {
            if (!(v instanceof Boolean)) {
                throw new Refused(at, "is not true or false");
            }
        } else {
            throw new IllegalStateException("schema.json names an unknown type " + type);
        }
    }

    private static void count(int n, Map<String, Object> s, String at) throws Refused {
        if (n < ((Number) s.getOrDefault("min_items", 0)).intValue()
                || (s.containsKey("max_items") && n > ((Number) s.get("max_items")).intValue())) {
            throw new Refused(at, "has " + n + " entries, outside its bounds");
        }
    }

    private static Map<?, ?> map(Object o, String key) {
        return (Map<?, ?>) ((Map<?, ?>) o).get(key);
    }

    /** Whether an added token matched in the normalized text is one no normalizer changes: ! to ~, no capital. */
    private static boolean unchanged(String content) {
        return content.codePoints().allMatch(c -> c >= '!' && c <= '~' && !(c >= 'A' && c <= 'Z'));
    }

    /** schema.json "tokenizer.relations", in order (a post-processor's own relations for its form only). */
    private static void relations(Map<String, Object> doc) throws Refused {
        Map<?, ?> model = map(doc, "model");
        Map<?, ?> post = map(doc, "post_processor");
        Map<?, ?> vocab = map(model, "vocab");
        Set<Object> seen = new HashSet<>();
        for (Map.Entry<?, ?> e : vocab.entrySet()) {
            if ((Long) e.getValue() >= vocab.size() || !seen.add(e.getValue())) {
                throw new Refused(pointer("/model/vocab", e.getKey()), "has id " + e.getValue() + ": the ids must be 0 "
                        + "to " + (vocab.size() - 1) + ", each once");
            }
        }
        if (!vocab.containsKey(model.get("unk_token"))) {
            throw new Refused("/model/unk_token", "is not a token of model.vocab");
        }
        List<?> added = (List<?>) doc.get("added_tokens");
        for (int i = 0; i < added.size(); i++) {
            Map<?, ?> t = (Map<?, ?>) added.get(i);
            if (!t.get("id").equals(vocab.get(t.get("content")))) {
                throw new Refused("/added_tokens/" + i, "is not a token of model.vocab with its id");
            }
        }
        for (int i = 0; i < added.size(); i++) {
            Map<?, ?> t = (Map<?, ?>) added.get(i);
            if ((Boolean) t.get("normalized") && !unchanged((String) t.get("content"))) {
                throw new Refused("/added_tokens/" + i + "/content", "is matched in the normalized text, so it must be "
                        + "printable ASCII without a capital letter");
            }
        }
        if (post.get("type").equals("RobertaProcessing")) {
            for (String which : new String[] {"cls", "sep"}) {
                List<?> special = (List<?>) post.get(which);
                if (!special.get(1).equals(vocab.get(special.get(0)))) {
                    throw new Refused("/post_processor/" + which, "is not [a token of model.vocab, its id]");
                }
            }
            return;
        }
        Map<?, ?> specials = map(post, "special_tokens");
        for (Map.Entry<?, ?> e : specials.entrySet()) {
            Map<?, ?> st = (Map<?, ?>) e.getValue();
            Object name = e.getKey();
            if (!(st.get("id").equals(name) && st.get("tokens").equals(List.of(name)) && vocab.containsKey(name)
                    && st.get("ids").equals(List.of(vocab.get(name))))) {
                throw new Refused(pointer("/post_processor/special_tokens", name), "must be {\"id\": NAME, \"ids\": "
                        + "[its vocabulary id], \"tokens\": [NAME]}");
            }
        }
        for (String which : new String[] {"single", "pair"}) {
            List<?> pieces = (List<?>) post.get(which);
            for (int i = 0; i < pieces.size(); i++) {
                Map<?, ?> special = map(pieces.get(i), "SpecialToken");
                if (special != null && !specials.containsKey(special.get("id"))) {
                    throw new Refused("/post_processor/" + which + "/" + i + "/SpecialToken/id", "is not a key of "
                            + "special_tokens");
                }
            }
        }
        List<?> single = (List<?>) post.get("single");
        boolean bert = single.size() == 3;
        for (int i = 0; bert && i < 3; i++) {
            Map<?, ?> piece = (Map<?, ?>) single.get(i);
            Map<?, ?> body = (Map<?, ?>) piece.values().iterator().next();
            Object kind = piece.containsKey("SpecialToken") ? "SpecialToken" : body.get("id");
            bert = kind.equals(i == 1 ? "A" : "SpecialToken") && (Long) body.get("type_id") == 0;
        }
        if (!bert) {
            throw new Refused("/post_processor/single", "must be [SpecialToken, Sequence A, SpecialToken] with type_id "
                    + "0 (BERT's [CLS] A [SEP])");
        }
    }
}
