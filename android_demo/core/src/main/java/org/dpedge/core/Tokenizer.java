package org.dpedge.core;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;

/**
 * WordPiece tokenization (BERT's and MPNet's) as the contract defines it (docs/bundle-format.md
 * section 6, runtime/tokenizer.py), on code points, with the contract's Unicode tables
 * ({@link Unicode}) and a checked tokenizer.json ({@link TokenizerFamily}):
 * <ol>
 *   <li>the text prefix, then the text, split around the added tokens that are not
 *       {@code normalized} (leftmost, longest first; each is its id);</li>
 *   <li>each piece between them normalised as its BertNormalizer says: clean_text removes
 *       U+0000, U+FFFD and the controls but tab, line feed and carriage return, and makes white
 *       space a space; handle_chinese_chars puts spaces around CJK ideographs (schema.json
 *       "chinese"); strip_accents (null: as lowercase) is NFD then no nonspacing mark;
 *       lowercase is each code point's full lowercase mapping; then split around the
 *       {@code normalized} added tokens (MPNet's {@code <unk>}) as in step 1 ({@code lstrip}
 *       and {@code rstrip} change no id: the white space they would take is dropped in step 3
 *       anyway);</li>
 *   <li>split on white space (removed) and around each punctuation code point (ASCII
 *       punctuation or the punctuation set);</li>
 *   <li>WordPiece: a word of more than max_input_chars_per_word code points is the unknown
 *       token; else the longest vocabulary prefix, then the longest continuation, and so on; a
 *       remainder no token matches makes the word the unknown token;</li>
 *   <li>the first max_length - 2 ids between the post-processor's two special tokens: the single
 *       template's ([CLS] and [SEP]) or RobertaProcessing's cls and sep ({@code <s>} and
 *       {@code </s>}).</li>
 * </ol>
 */
public final class Tokenizer {
    private static final String ASCII_PUNCTUATION = Contract.string("tokenize.ascii_punctuation");
    /** clean_text removes these besides the controls, and keeps these controls. */
    private static final Unicode.Set CLEAN_REMOVES = Unicode.Set.of(Contract.ints(Contract.get("tokenize.clean_text_removes")));
    private static final Unicode.Set CLEAN_KEEPS = Unicode.Set.of(Contract.ints(Contract.get("tokenize.clean_text_keeps")));
    private static final Unicode.Set CHINESE = new Unicode.Set(Contract.ints(Contract.get("chinese")));
    private static final int CACHE_WORDS = 1 << 16;

    private final boolean clean;
    private final boolean chinese;
    private final boolean lowercase;
    private final boolean strip;
    private final Map<String, Integer> vocab = new HashMap<>();
    private final int unk;
    private final String continuing;
    private final int maxWord;
    /**
     * Added tokens matched in the text as given (step 1) and in the normalized text (step 2), by
     * first code point, longest first (ties in file order): their code points, then their id.
     */
    private final Map<Integer, List<int[]>> added = new HashMap<>();
    private final Map<Integer, List<int[]>> addedNormalized = new HashMap<>();
    private final int first;
    private final int last;
    private final int maxLength;
    private final String prefix;
    private final Map<String, int[]> cache = new ConcurrentHashMap<>();

    Tokenizer(Map<String, Object> doc, int maxLength, String textPrefix) {
        Map<?, ?> n = (Map<?, ?>) doc.get("normalizer");
        clean = (Boolean) n.get("clean_text");
        chinese = (Boolean) n.get("handle_chinese_chars");
        lowercase = (Boolean) n.get("lowercase");
        strip = n.get("strip_accents") == null ? lowercase : (Boolean) n.get("strip_accents");
        Map<?, ?> model = (Map<?, ?>) doc.get("model");
        ((Map<?, ?>) model.get("vocab")).forEach((k, v) -> vocab.put((String) k, ((Long) v).intValue()));
        unk = vocab.get(model.get("unk_token"));
        continuing = (String) model.get("continuing_subword_prefix");
        maxWord = ((Long) model.get("max_input_chars_per_word")).intValue();
        List<?> tokens = (List<?>) doc.get("added_tokens");
        table(tokens, false, added);
        table(tokens, true, addedNormalized);
        Map<?, ?> post = (Map<?, ?>) doc.get("post_processor");
        if (post.get("type").equals("RobertaProcessing")) {  // [token, id] each
            first = ((Long) ((List<?>) post.get("cls")).get(1)).intValue();
            last = ((Long) ((List<?>) post.get("sep")).get(1)).intValue();
        } else {
            List<?> single = (List<?>) post.get("single");
            first = special(post, single.get(0));
            last = special(post, single.get(2));
        }
        this.maxLength = maxLength;
        this.prefix = textPrefix;
    }

    /** Fills {@code into} with the added tokens whose {@code normalized} is {@code normalized}. */
    private static void table(List<?> tokens, boolean normalized, Map<Integer, List<int[]>> into) {
        Map<String, Integer> contents = new HashMap<>();
        List<String> order = new ArrayList<>();
        for (Object o : tokens) {
            Map<?, ?> t = (Map<?, ?>) o;
            String content = (String) t.get("content");
            if (t.get("normalized").equals(normalized)
                    && contents.put(content, ((Long) t.get("id")).intValue()) == null) {
                order.add(content);
            }
        }
        order.sort((a, b) -> Text.length(b) - Text.length(a));  // stable: equal lengths keep file order
        for (String content : order) {
            int[] cps = Unicode.codePoints(content);
            int[] entry = Arrays.copyOf(cps, cps.length + 1);
            entry[cps.length] = contents.get(content);
            into.computeIfAbsent(cps[0], k -> new ArrayList<>()).add(entry);
        }
    }

    private static int special(Map<?, ?> post, Object piece) {
        Object name = ((Map<?, ?>) ((Map<?, ?>) piece).get("SpecialToken")).get("id");
        Map<?, ?> st = (Map<?, ?>) ((Map<?, ?>) post.get("special_tokens")).get(name);
        return ((Long) ((List<?>) st.get("ids")).get(0)).intValue();
    }

    /** Token ids of one text: [CLS] (or {@code <s>}), the prefix and the text's ids (at most max_length - 2), [SEP]. */
    public int[] encode(String text) {
        int[] body = pieces(Unicode.codePoints(prefix + text), maxLength - 2);
        int[] out = new int[body.length + 2];
        out[0] = first;
        System.arraycopy(body, 0, out, 1, body.length);
        out[out.length - 1] = last;
        return out;
    }

    /** Whether the text alone (no prefix) gives a token: one of only white space or invisible code points does not. */
    public boolean hasToken(String text) {
        return pieces(Unicode.codePoints(text), 1).length > 0;
    }

    /** The ids of a text without special tokens, at most {@code limit}. */
    private int[] pieces(int[] cps, int limit) {
        List<Integer> ids = new ArrayList<>();
        split(cps, added, ids, limit, piece -> split(normalize(piece), addedNormalized, ids, limit,
                sub -> words(sub, ids, limit)));
        int[] out = new int[Math.min(limit, ids.size())];
        for (int i = 0; i < out.length; i++) {
            out[i] = ids.get(i);
        }
        return out;
    }

    /**
     * Splits {@code cps} around the added tokens of {@code table} (leftmost, longest first): each
     * non-empty piece between them to {@code each}, each token's id to {@code ids}, in order,
     * until {@code limit} ids.
     */
    private static void split(int[] cps, Map<Integer, List<int[]>> table, List<Integer> ids, int limit,
            Consumer<int[]> each) {
        if (table.isEmpty()) {  // BERT's normalized text: no token to look for
            if (cps.length > 0) {
                each.accept(cps);
            }
            return;
        }
        int start = 0;
        for (int i = 0; i <= cps.length && ids.size() < limit; ) {
            int[] match = i < cps.length ? addedAt(table, cps, i) : null;
            if (match == null && i < cps.length) {
                i++;
                continue;
            }
            if (i > start) {
                each.accept(Arrays.copyOfRange(cps, start, i));
            }
            if (match == null) {
                break;
            }
            ids.add(match[match.length - 1]);
            i += match.length - 1;
            start = i;
        }
    }

    private static int[] addedAt(Map<Integer, List<int[]>> table, int[] cps, int i) {
        for (int[] entry : table.getOrDefault(cps[i], List.of())) {
            int n = entry.length - 1;
            if (i + n <= cps.length && Arrays.equals(cps, i, i + n, entry, 0, n)) {
                return entry;
            }
        }
        return null;
    }

    private static boolean ascii(int[] cps) {
        for (int cp : cps) {
            if (cp >= 0x80) {
                return false;
            }
        }
        return true;
    }

    /** BertNormalizer's steps, as configured. */
    int[] normalize(int[] cps) {
        if (clean) {
            int n = 0;
            for (int cp : cps) {
                boolean control = (Unicode.CONTROL.contains(cp) && !CLEAN_KEEPS.contains(cp))
                        || CLEAN_REMOVES.contains(cp);
                if (!control) {
                    cps[n++] = Unicode.WHITESPACE.contains(cp) ? ' ' : cp;
                }
            }
            cps = Arrays.copyOf(cps, n);
        }
        if (chinese && !ascii(cps)) {
            int[] out = new int[3 * cps.length];
            int n = 0;
            for (int cp : cps) {
                boolean ideograph = CHINESE.contains(cp);
                if (ideograph) {
                    out[n++] = ' ';
                }
                out[n++] = cp;
                if (ideograph) {
                    out[n++] = ' ';
                }
            }
            cps = Arrays.copyOf(out, n);
        }
        if (strip && !ascii(cps)) {
            cps = Unicode.remove(Unicode.nfd(cps), Unicode.NONSPACING_MARK);
        }
        return lowercase ? Unicode.lower(cps) : cps;
    }

    private static boolean punctuation(int cp) {
        return (cp < 0x80 && ASCII_PUNCTUATION.indexOf(cp) >= 0) || Unicode.PUNCTUATION.contains(cp);
    }

    /** Splits on white space and around punctuation, adding each word's WordPiece ids. */
    private void words(int[] cps, List<Integer> ids, int limit) {
        int start = -1;
        for (int i = 0; i <= cps.length && ids.size() < limit; i++) {
            boolean punct = i < cps.length && punctuation(cps[i]);
            boolean inWord = i < cps.length && !punct && !Unicode.WHITESPACE.contains(cps[i]);
            if (inWord && start < 0) {
                start = i;
            } else if (!inWord && start >= 0) {
                for (int id : word(Arrays.copyOfRange(cps, start, i))) {
                    ids.add(id);
                }
                start = -1;
            }
            if (punct && ids.size() < limit) {
                for (int id : word(new int[] {cps[i]})) {
                    ids.add(id);
                }
            }
        }
    }

    private int[] word(int[] cps) {
        String w = Unicode.string(cps);
        int[] ids = cache.get(w);
        if (ids != null) {
            return ids;
        }
        List<Integer> out = new ArrayList<>();
        for (int start = 0; start < cps.length; ) {
            Integer id = null;
            int end = cps.length;
            for (; id == null && end > start && cps.length <= maxWord; end--) {
                id = vocab.get((start == 0 ? "" : continuing) + new String(cps, start, end - start));
            }
            if (id == null) {  // too long, or a remainder no token matches: the unknown token
                out.clear();
                out.add(unk);
                break;
            }
            out.add(id);
            start = end + 1;
        }
        ids = out.stream().mapToInt(Integer::intValue).toArray();
        if (cache.size() < CACHE_WORDS) {
            cache.put(w, ids);
        }
        return ids;
    }
}
