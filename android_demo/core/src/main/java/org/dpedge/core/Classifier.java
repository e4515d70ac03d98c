package org.dpedge.core;

/**
 * A loaded bundle, ready to classify texts offline: tokenize, embed, hash (when the bundle has
 * vote tables), score.
 *
 * <p>Why a facade: this is the one code path an app calls, the same steps in the same order
 * as the Python runtime's {@code Classifier.predict} (for formats 2 and 3: offsets in the
 * hashing, the blended score; a format-3 bundle without vote tables is not hashed at all), so a
 * phone and a laptop give a text the same label. Everything it does reads only the released bundle: it is post-processing, and
 * any number of queries costs no further privacy budget.
 *
 * <p>After constructing it, call {@link #verify()} once (off the UI thread: it runs the
 * encoder) when the bundle has a check text; the Python runtime does this at load and refuses
 * an engine that computes a different embedding. Instances are immutable; whether
 * {@link #predict} may run on several threads at once depends on the {@link TextEncoder}.
 */
public final class Classifier {
    /** Texts longer than this many characters (code points) are refused, as in Python. */
    public static final int MAX_TEXT_CHARS = 1_000_000;
    /** An engine whose embedding of the check text is less similar than this is refused. */
    public static final double CHECK_MIN_COSINE = 0.98;

    private final Bundle bundle;
    private final TextEncoder encoder;
    private final WordPieceTokenizer tokenizer;
    private final SimHasher hasher;
    private final Scorer scorer;

    /**
     * A classifier scoring as the bundle says (the blend for formats 2 and 3, Algorithm 2 for
     * vote tables alone).
     *
     * @throws BundleException if the bundle's tokenizer cannot be loaded
     * @throws IllegalArgumentException if the bundle's scoring map is one {@link Scorer.Weights#fromMap}
     *     refuses (never for a bundle from {@link BundleReader}, which refuses such a map first)
     */
    public Classifier(Bundle bundle, TextEncoder encoder) throws BundleException {
        this(bundle, encoder, Scorer.Mode.BLEND);
    }

    /**
     * A classifier scoring in the given mode: the blend, or one component alone (Python's
     * {@code Classifier.load(..., score=...)}).
     *
     * @throws BundleException if the bundle's tokenizer cannot be loaded
     * @throws IllegalArgumentException if the mode needs a field the bundle lacks (Python's
     *     messages: "this bundle has no vote tables to score with votes", ...)
     */
    public Classifier(Bundle bundle, TextEncoder encoder, Scorer.Mode mode) throws BundleException {
        if (bundle == null || encoder == null) {
            throw new NullPointerException("bundle and encoder are required");
        }
        this.bundle = bundle;
        this.encoder = encoder;
        this.tokenizer = new WordPieceTokenizer(bundle.encoder().tokenizerJson(), bundle.encoder().maxLength());
        this.scorer = new Scorer(bundle, mode);
        this.hasher = bundle.hasVotes() ? new SimHasher(bundle) : null;
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
        return new Prediction(bundle.labels(), scorer.scores(embedding,
                hasher == null ? null : hasher.buckets(embedding)));
    }

    /** The embedding of one text (checked like {@link #predict}). */
    public float[] embed(String text) throws Exception {
        return embedIds(tokenizer.encode(checkText(text)));
    }

    /**
     * Embeds the bundle's check text and compares it with the exporter's embedding of it.
     *
     * @return the cosine, or null when the bundle has no check (format 1.0)
     * @throws BundleException when the cosine is below {@link #CHECK_MIN_COSINE}: the engine
     *     computes something else, so its answers would be wrong
     */
    public Double verify() throws Exception {
        Bundle.Encoder spec = bundle.encoder();
        if (spec.checkText() == null) {
            return null;
        }
        float[] emb = embedIds(tokenizer.encode(spec.checkText()));
        float[] ref = spec.checkEmbeddingRef();
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
            throw new BundleException(String.format(java.util.Locale.ROOT,
                    "the %s encoder computes a different embedding than the exporter did for the bundle's check "
                    + "text (cosine %.3f < %s): this engine cannot run the encoder correctly, so its answers "
                    + "would be wrong.", spec.format(), cos, CHECK_MIN_COSINE));
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
        if (PyText.isBlank(text)) {
            throw new IllegalArgumentException("empty text: there is nothing to classify");
        }
        if (text.length() > MAX_TEXT_CHARS) {  // UTF-16 units >= code points: count only when it matters
            int n = PyText.length(text);
            if (n > MAX_TEXT_CHARS) {
                throw new IllegalArgumentException("text has " + n + " characters, over the limit of "
                        + MAX_TEXT_CHARS);
            }
        }
        return text;
    }

    public Bundle bundle() {
        return bundle;
    }

    public WordPieceTokenizer tokenizer() {
        return tokenizer;
    }

    /** The bundle's hasher, or null when it has no vote tables (format 3's default). */
    public SimHasher hasher() {
        return hasher;
    }

    public Scorer scorer() {
        return scorer;
    }
}
