package org.dpedge.core;

import java.util.Locale;

/**
 * A loaded bundle, ready to classify texts offline: prefix, tokenize, embed, score.
 *
 * <p>Why a facade: this is the one code path an app calls, the same steps in the same order as
 * the Python runtime's {@code Classifier.predict}, so a phone and a laptop give a text the same
 * label. It reads only the released bundle: post-processing, so any number of queries costs no
 * further privacy budget.
 *
 * <p>After constructing it, call {@link #verify()} once (off the UI thread: it runs the encoder):
 * the Python runtime does the same at load and refuses an engine that computes another
 * embedding than the exporter's. Instances are immutable; whether {@link #predict} may run on
 * several threads at once depends on the {@link TextEncoder}.
 */
public final class Classifier {
    /** Texts longer than this many characters (code points) are refused, as in Python. */
    public static final int MAX_TEXT_CHARS = 1_000_000;
    /** An engine whose embedding of the check text is less similar than this is refused. */
    public static final double CHECK_MIN_COSINE = 0.98;

    private final Bundle bundle;
    private final TextEncoder encoder;
    private final WordPieceTokenizer tokenizer;
    private final Scorer scorer;

    /** @throws BundleException if the bundle's tokenizer cannot be loaded */
    public Classifier(Bundle bundle, TextEncoder encoder) throws BundleException {
        if (bundle == null || encoder == null) {
            throw new NullPointerException("bundle and encoder are required");
        }
        this.bundle = bundle;
        this.encoder = encoder;
        this.tokenizer = new WordPieceTokenizer(bundle.encoder().tokenizerJson(), bundle.encoder().maxLength());
        this.scorer = new Scorer(bundle);
    }

    /**
     * The label and per-label scores of one text.
     *
     * @throws IllegalArgumentException if the text is null, blank or over {@link #MAX_TEXT_CHARS}
     * @throws BundleException if the encoder returns an embedding of the wrong size
     * @throws Exception whatever the {@link TextEncoder} throws
     */
    public Prediction predict(String text) throws Exception {
        return predictEmbedding(embed(text));
    }

    /** The prediction for an embedding computed elsewhere ({@link Bundle#dim()} values). */
    public Prediction predictEmbedding(float[] embedding) {
        if (embedding == null || embedding.length != bundle.dim()) {
            throw new IllegalArgumentException("embedding must have " + bundle.dim() + " values, got "
                    + (embedding == null ? "null" : String.valueOf(embedding.length)));
        }
        return new Prediction(bundle.labels(), scorer.scores(embedding));
    }

    /** The embedding of one text: the bundle's text prefix, then its tokenizer and encoder. */
    public float[] embed(String text) throws Exception {
        return embedIds(tokens(checkText(text)));
    }

    /** The token ids of one text as the encoder gets them ({@code encoder.text_prefix} prepended). */
    public int[] tokens(String text) {
        return tokenizer.encode(bundle.encoder().textPrefix() + text);
    }

    /**
     * Embeds the bundle's check text and compares it with the exporter's embedding of it.
     *
     * @return the cosine
     * @throws BundleException when the cosine is below {@link #CHECK_MIN_COSINE}: the engine
     *     computes something else, so its answers would be wrong
     */
    public double verify() throws Exception {
        Bundle.Encoder spec = bundle.encoder();
        float[] emb = embedIds(tokens(spec.checkText()));
        float[] ref = spec.checkEmbedding;
        double dot = 0;
        double a = 0;
        double b = 0;
        for (int i = 0; i < ref.length; i++) {
            dot += (double) emb[i] * ref[i];
            a += (double) emb[i] * emb[i];
            b += (double) ref[i] * ref[i];
        }
        double cos = dot / (Math.sqrt(a) * Math.sqrt(b) + 1e-12);
        if (!(cos >= CHECK_MIN_COSINE)) {
            throw new BundleException(String.format(Locale.ROOT, "the %s encoder computes a different embedding than "
                    + "the exporter did for the bundle's check text (cosine %.3f < %s): this engine cannot run the "
                    + "encoder correctly, so its answers would be wrong.", spec.format(), cos, CHECK_MIN_COSINE));
        }
        return cos;
    }

    private float[] embedIds(int[] ids) throws Exception {
        float[] emb = encoder.embed(ids);
        if (emb == null || emb.length != bundle.dim()) {
            throw new BundleException("encoder returned " + (emb == null ? "null" : emb.length + " values")
                    + ", expected " + bundle.dim());
        }
        return emb;
    }

    /** Returns the text if it can be classified, else throws saying why (as Python's check_text). */
    static String checkText(String text) {
        if (text == null) {
            throw new IllegalArgumentException("text must be a string, got null");
        }
        if (Text.isBlank(text)) {
            throw new IllegalArgumentException("empty text: there is nothing to classify");
        }
        if (text.length() > MAX_TEXT_CHARS && Text.length(text) > MAX_TEXT_CHARS) {
            throw new IllegalArgumentException("text has " + Text.length(text) + " characters, over the limit of "
                    + MAX_TEXT_CHARS);
        }
        for (int i = 0, n = 0; i < text.length(); n++) {  // a lone surrogate has no UTF-8 for the tokenizer
            int cp = text.codePointAt(i);
            if (cp >= 0xD800 && cp <= 0xDFFF) {
                throw new IllegalArgumentException(String.format(Locale.ROOT, "not valid UTF-8 (lone surrogate U+%04X at "
                        + "character %d)", cp, n));
            }
            i += Character.charCount(cp);
        }
        return text;
    }

    public Bundle bundle() {
        return bundle;
    }

    public WordPieceTokenizer tokenizer() {
        return tokenizer;
    }

    public Scorer scorer() {
        return scorer;
    }
}
