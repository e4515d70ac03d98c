package org.dpedge.core;

import java.text.Normalizer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * BERT WordPiece tokenization from a bundle's Hugging Face {@code tokenizer.json}, giving the
 * same token ids as the Python {@code tokenizers} library.
 *
 * <p>Why a port: the encoder only computes the exporter's embedding if it is fed exactly the
 * exporter's token ids, and one different id moves the embedding and maybe a bucket. This
 * class reproduces, step by step, what {@code Tokenizer.encode(text, add_special_tokens=True)}
 * does for a BERT tokenizer such as all-MiniLM-L6-v2's, with the bundle's overrides
 * (no padding, truncation to {@code max_length} including the special tokens):
 * <ol>
 *   <li>added tokens whose {@code normalized} flag is false ([CLS], [SEP], [MASK]...) are
 *       split out of the raw text first, leftmost-longest, and map straight to their ids;</li>
 *   <li>BertNormalizer on every other piece: clean_text drops U+0000, U+FFFD and every
 *       "other" code point (Cc, Cf, Co, Cs; tab, newline and carriage return excepted)
 *       and maps whitespace to a space; handle_chinese_chars puts spaces around CJK
 *       ideographs; strip_accents (null: follow lowercase) is NFD then drop Mn; lowercase is
 *       per code point, as Rust's {@code char::to_lowercase};</li>
 *   <li>added tokens whose {@code normalized} flag is true are split out of the normalized
 *       text;</li>
 *   <li>BertPreTokenizer: split on whitespace (removed), then isolate each punctuation code
 *       point (ASCII punctuation or Unicode category P*);</li>
 *   <li>WordPiece: greedy longest-match-first with the {@code ##} continuation prefix; a word
 *       over {@code max_input_chars_per_word} code points, or with a piece not in the vocabulary,
 *       becomes the unknown token;</li>
 *   <li>keep the first {@code max_length - specials} ids, then add the post-processor's
 *       special tokens ([CLS] ... [SEP]).</li>
 * </ol>
 * Everything works on code points, not UTF-16 units, so emoji and supplementary-plane CJK
 * are counted and matched like Rust counts {@code char}s. Character classes come from
 * {@link RustUnicode}, which matches the Rust library's (older) Unicode tables.
 *
 * <p>Only the components of BERT-family tokenizers are supported (BertNormalizer,
 * BertPreTokenizer, WordPiece, TemplateProcessing or BertProcessing); any other component
 * is refused at construction rather than tokenized differently.
 */
public final class WordPieceTokenizer {
    private final int maxLength;
    private final boolean normalize;
    private final boolean cleanText;
    private final boolean handleChineseChars;
    private final boolean stripAccents;
    private final boolean lowercase;
    private final Map<String, Integer> vocab;
    private final int unkId;
    private final String continuingPrefix;
    private final int maxInputCharsPerWord;
    private final List<AddedToken> rawAdded = new ArrayList<>();
    private final List<AddedToken> normalizedAdded = new ArrayList<>();
    private final int[] prefixIds;
    private final int[] suffixIds;

    /** An added token to split out of the text: its content and id. */
    private static final class AddedToken {
        final String content;
        final int id;

        AddedToken(String content, int id) {
            this.content = content;
            this.id = id;
        }
    }

    /**
     * @param tokenizerJson the bundle's {@code encoder.tokenizer_json}
     * @param maxLength the bundle's {@code encoder.max_length} (special tokens included)
     * @throws BundleException if the JSON is malformed or uses a component this port lacks
     */
    public WordPieceTokenizer(String tokenizerJson, int maxLength) throws BundleException {
        try {
            Map<String, Object> root = asMap(MiniJson.parse(tokenizerJson), "the document");
            this.maxLength = maxLength;

            Object norm = root.get("normalizer");
            normalize = norm != null;
            if (normalize) {
                Map<String, Object> n = asMap(norm, "normalizer");
                requireType(n, "normalizer", "BertNormalizer");
                cleanText = bool(n, "clean_text", true);
                handleChineseChars = bool(n, "handle_chinese_chars", true);
                lowercase = bool(n, "lowercase", true);
                Object strip = n.get("strip_accents");
                stripAccents = strip == null ? lowercase : bool(n, "strip_accents", lowercase);
            } else {
                cleanText = handleChineseChars = stripAccents = lowercase = false;
            }

            requireType(asMap(root.get("pre_tokenizer"), "pre_tokenizer"), "pre_tokenizer", "BertPreTokenizer");

            Map<String, Object> model = asMap(root.get("model"), "model");
            requireType(model, "model", "WordPiece");
            Map<String, Object> v = asMap(model.get("vocab"), "model.vocab");
            vocab = new HashMap<>(v.size() * 2);
            for (Map.Entry<String, Object> e : v.entrySet()) {
                vocab.put(e.getKey(), intValue(e.getValue(), "model.vocab"));
            }
            String unk = string(model, "unk_token", "[UNK]");
            Integer unkIdOrNull = vocab.get(unk);
            if (unkIdOrNull == null) {
                throw new IllegalArgumentException("the unknown token " + unk + " is not in the vocabulary");
            }
            unkId = unkIdOrNull;
            continuingPrefix = string(model, "continuing_subword_prefix", "##");
            maxInputCharsPerWord = model.containsKey("max_input_chars_per_word")
                    ? intValue(model.get("max_input_chars_per_word"), "model.max_input_chars_per_word") : 100;

            Object added = root.get("added_tokens");
            if (added != null) {
                for (Object o : asList(added, "added_tokens")) {
                    addToken(asMap(o, "added_tokens[]"));
                }
            }
            // Leftmost-longest matching: try longer contents first at each position.
            rawAdded.sort((a, b) -> b.content.length() - a.content.length());
            normalizedAdded.sort((a, b) -> b.content.length() - a.content.length());

            List<Integer> prefix = new ArrayList<>();
            List<Integer> suffix = new ArrayList<>();
            postProcessor(root.get("post_processor"), prefix, suffix);
            prefixIds = toArray(prefix);
            suffixIds = toArray(suffix);
            if (maxLength < prefixIds.length + suffixIds.length) {
                throw new IllegalArgumentException("max_length " + maxLength + " leaves no room for the "
                        + (prefixIds.length + suffixIds.length) + " special tokens");
            }
        } catch (IllegalArgumentException | ClassCastException e) {
            throw new BundleException("the bundle's tokenizer cannot be loaded: " + Text.escape(String.valueOf(e.getMessage())),
                    e);
        }
    }

    /** Sequences are truncated to this many ids, special tokens included. */
    public int maxLength() {
        return maxLength;
    }

    /** The token ids of one text: [CLS] word pieces [SEP], truncated, not padded. */
    public int[] encode(String text) {
        int limit = maxLength - prefixIds.length - suffixIds.length;
        List<Integer> ids = new ArrayList<>();
        for (Object piece : splitAdded(text, rawAdded)) {
            if (ids.size() >= limit) {
                break;  // pieces are independent, so stopping early does not change the kept ids
            }
            if (piece instanceof Integer) {
                ids.add((Integer) piece);
                continue;
            }
            String normalized = normalize ? normalize((String) piece) : (String) piece;
            for (Object sub : splitAdded(normalized, normalizedAdded)) {
                if (sub instanceof Integer) {
                    ids.add((Integer) sub);
                } else {
                    tokenizeWords((String) sub, ids, limit);
                }
            }
        }
        int kept = Math.min(ids.size(), limit);
        int[] out = new int[prefixIds.length + kept + suffixIds.length];
        System.arraycopy(prefixIds, 0, out, 0, prefixIds.length);
        for (int i = 0; i < kept; i++) {
            out[prefixIds.length + i] = ids.get(i);
        }
        System.arraycopy(suffixIds, 0, out, prefixIds.length + kept, suffixIds.length);
        return out;
    }

    // ------------------------------------------------------------------ added tokens

    private void addToken(Map<String, Object> t) {
        String content = string(t, "content", null);
        int id = intValue(t.get("id"), "added_tokens[].id");
        boolean special = bool(t, "special", false);
        for (String flag : new String[] {"single_word", "lstrip", "rstrip"}) {
            if (bool(t, flag, false)) {
                throw new IllegalArgumentException("added token " + content + " uses " + flag
                        + ", which this runtime does not support");
            }
        }
        if (content.isEmpty()) {
            return;
        }
        if (bool(t, "normalized", !special)) {
            normalizedAdded.add(new AddedToken(normalize ? normalize(content) : content, id));
        } else {
            rawAdded.add(new AddedToken(content, id));
        }
    }

    /**
     * Splits {@code s} around the leftmost-longest occurrences of the added tokens: a list of
     * Strings (text between matches, never empty) and Integers (a matched token's id).
     */
    private static List<Object> splitAdded(String s, List<AddedToken> tokens) {
        List<Object> out = new ArrayList<>();
        if (tokens.isEmpty()) {
            if (!s.isEmpty()) {
                out.add(s);
            }
            return out;
        }
        int last = 0;
        int i = 0;
        while (i < s.length()) {
            AddedToken match = null;
            for (AddedToken t : tokens) {  // longest first
                if (s.startsWith(t.content, i)) {
                    match = t;
                    break;
                }
            }
            if (match == null) {
                i++;
                continue;
            }
            if (i > last) {
                out.add(s.substring(last, i));
            }
            out.add(match.id);
            i += match.content.length();
            last = i;
        }
        if (last < s.length()) {
            out.add(s.substring(last));
        }
        return out;
    }

    // ------------------------------------------------------------------ BertNormalizer

    /** BertNormalizer on one piece of text (see the class comment for the steps). */
    String normalize(String s) {
        StringBuilder sb = new StringBuilder(s.length() + 8);
        for (int i = 0; i < s.length(); ) {
            int cp = s.codePointAt(i);
            i += Character.charCount(cp);
            if (cleanText) {
                if (cp == 0 || cp == 0xFFFD || isControl(cp)) {
                    continue;
                }
                if (isWhitespace(cp)) {
                    cp = ' ';
                }
            }
            if (handleChineseChars && isChineseChar(cp)) {
                sb.append(' ').appendCodePoint(cp).append(' ');
            } else {
                sb.appendCodePoint(cp);
            }
        }
        String out = sb.toString();
        if (stripAccents) {
            String nfd = Normalizer.normalize(out, Normalizer.Form.NFD);
            sb.setLength(0);
            for (int i = 0; i < nfd.length(); ) {
                int cp = nfd.codePointAt(i);
                i += Character.charCount(cp);
                if (!RustUnicode.isNonspacingMark(cp)) {
                    sb.appendCodePoint(cp);
                }
            }
            out = sb.toString();
        }
        if (lowercase) {
            sb.setLength(0);
            for (int i = 0; i < out.length(); ) {
                int cp = out.codePointAt(i);
                i += Character.charCount(cp);
                if (cp == 0x130) {
                    sb.append("i\u0307");  // the one unconditional multi-character lowercase mapping
                } else {
                    sb.appendCodePoint(Character.toLowerCase(cp));
                }
            }
            out = sb.toString();
        }
        return out;
    }

    /** Rust's {@code char::is_whitespace} (the Unicode White_Space property), plus \t \n \r. */
    static boolean isWhitespace(int cp) {
        switch (cp) {
            case 0x09: case 0x0A: case 0x0B: case 0x0C: case 0x0D: case 0x20:
            case 0x85: case 0xA0: case 0x1680:
            case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000:
                return true;
            default:
                return cp >= 0x2000 && cp <= 0x200A;
        }
    }

    /** BertNormalizer's control test: an "other" code point (Cc, Cf, Co, Cs) but \t \n \r. */
    static boolean isControl(int cp) {
        return cp != '\t' && cp != '\n' && cp != '\r' && RustUnicode.isOther(cp);
    }

    /**
     * The CJK ideograph blocks BERT surrounds with spaces, as the Rust library has them: its
     * fourth supplementary range starts at U+2B920, where Google's BERT has U+2B820, so
     * U+2B820..U+2B91F are not spaced (verified against the Python library).
     */
    static boolean isChineseChar(int cp) {
        return (cp >= 0x4E00 && cp <= 0x9FFF)
                || (cp >= 0x3400 && cp <= 0x4DBF)
                || (cp >= 0x20000 && cp <= 0x2A6DF)
                || (cp >= 0x2A700 && cp <= 0x2B73F)
                || (cp >= 0x2B740 && cp <= 0x2B81F)
                || (cp >= 0x2B920 && cp <= 0x2CEAF)
                || (cp >= 0xF900 && cp <= 0xFAFF)
                || (cp >= 0x2F800 && cp <= 0x2FA1F);
    }

    // ------------------------------------------------------------------ BertPreTokenizer + WordPiece

    /** ASCII punctuation or a Unicode P* category, as BertPreTokenizer isolates it. */
    static boolean isPunctuation(int cp) {
        return (cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) || (cp >= 123 && cp <= 126)
                || RustUnicode.isPunctuation(cp);
    }

    /** Pre-tokenizes {@code s} and appends each word's pieces until {@code limit} ids exist. */
    private void tokenizeWords(String s, List<Integer> ids, int limit) {
        int[] cps = s.codePoints().toArray();
        int start = -1;  // start of the current word, or -1
        for (int i = 0; i <= cps.length && ids.size() < limit; i++) {
            boolean end = i == cps.length;
            boolean space = !end && isWhitespace(cps[i]);
            boolean punct = !end && !space && isPunctuation(cps[i]);
            if (end || space || punct) {
                if (start >= 0) {
                    wordPiece(cps, start, i, ids);
                    start = -1;
                }
                if (punct && ids.size() < limit) {
                    wordPiece(cps, i, i + 1, ids);
                }
            } else if (start < 0) {
                start = i;
            }
        }
    }

    /** WordPiece on the word {@code cps[from, to)}: greedy longest match first. */
    private void wordPiece(int[] cps, int from, int to, List<Integer> ids) {
        if (to - from > maxInputCharsPerWord) {
            ids.add(unkId);
            return;
        }
        List<Integer> pieces = new ArrayList<>();
        int start = from;
        while (start < to) {
            Integer found = null;
            int end = to;
            while (start < end) {
                String sub = new String(cps, start, end - start);
                found = vocab.get(start > from ? continuingPrefix + sub : sub);
                if (found != null) {
                    break;
                }
                end--;
            }
            if (found == null) {
                ids.add(unkId);  // one piece missing: the whole word is unknown
                return;
            }
            pieces.add(found);
            start = end;
        }
        ids.addAll(pieces);
    }

    // ------------------------------------------------------------------ post-processor

    private void postProcessor(Object pp, List<Integer> prefix, List<Integer> suffix) {
        if (pp == null) {
            return;
        }
        Map<String, Object> p = asMap(pp, "post_processor");
        String type = string(p, "type", null);
        if (type.equals("BertProcessing")) {
            prefix.add(intValue(asList(p.get("cls"), "post_processor.cls").get(1), "post_processor.cls"));
            suffix.add(intValue(asList(p.get("sep"), "post_processor.sep").get(1), "post_processor.sep"));
        } else if (type.equals("TemplateProcessing")) {
            Map<String, Object> specials = asMap(p.get("special_tokens"), "post_processor.special_tokens");
            boolean seenSequence = false;
            for (Object item : asList(p.get("single"), "post_processor.single")) {
                Map<String, Object> piece = asMap(item, "post_processor.single[]");
                if (piece.containsKey("Sequence")) {
                    if (seenSequence) {
                        throw new IllegalArgumentException("post_processor.single has two sequences");
                    }
                    seenSequence = true;
                } else if (piece.containsKey("SpecialToken")) {
                    String name = string(asMap(piece.get("SpecialToken"), "SpecialToken"), "id", null);
                    Map<String, Object> special = asMap(specials.get(name), "post_processor.special_tokens." + name);
                    for (Object id : asList(special.get("ids"), "post_processor.special_tokens." + name + ".ids")) {
                        (seenSequence ? suffix : prefix).add(intValue(id, "special token id"));
                    }
                } else {
                    throw new IllegalArgumentException("unknown post_processor.single item " + piece.keySet());
                }
            }
            if (!seenSequence) {
                throw new IllegalArgumentException("post_processor.single has no sequence");
            }
        } else {
            throw new IllegalArgumentException("post_processor type " + type + " is not supported by this runtime");
        }
    }

    // ------------------------------------------------------------------ JSON access

    @SuppressWarnings("unchecked")
    private static Map<String, Object> asMap(Object o, String what) {
        if (!(o instanceof Map)) {
            throw new IllegalArgumentException(what + " must be an object, got " + describe(o));
        }
        return (Map<String, Object>) o;
    }

    @SuppressWarnings("unchecked")
    private static List<Object> asList(Object o, String what) {
        if (!(o instanceof List)) {
            throw new IllegalArgumentException(what + " must be an array, got " + describe(o));
        }
        return (List<Object>) o;
    }

    private static String describe(Object o) {
        return o == null ? "null" : o.getClass().getSimpleName();
    }

    private static void requireType(Map<String, Object> m, String what, String expected) {
        Object type = m.get("type");
        if (!expected.equals(type)) {
            throw new IllegalArgumentException(what + " type " + type + " is not supported by this runtime (only "
                    + expected + ")");
        }
    }

    private static boolean bool(Map<String, Object> m, String key, boolean dflt) {
        Object v = m.get(key);
        if (v == null) {
            return dflt;
        }
        if (!(v instanceof Boolean)) {
            throw new IllegalArgumentException(key + " must be true or false, got " + v);
        }
        return (Boolean) v;
    }

    private static String string(Map<String, Object> m, String key, String dflt) {
        Object v = m.get(key);
        if (v == null && dflt != null) {
            return dflt;
        }
        if (!(v instanceof String)) {
            throw new IllegalArgumentException(key + " must be a string, got " + describe(v));
        }
        return (String) v;
    }

    private static int intValue(Object v, String what) {
        if (!(v instanceof Long) || (Long) v < 0 || (Long) v > Integer.MAX_VALUE) {
            throw new IllegalArgumentException(what + " must be a non-negative integer, got " + v);
        }
        return (int) (long) (Long) v;
    }

    private static int[] toArray(List<Integer> list) {
        int[] out = new int[list.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = list.get(i);
        }
        return out;
    }
}
