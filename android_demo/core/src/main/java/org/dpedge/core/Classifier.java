package org.dpedge.core;

import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A loaded bundle, ready to classify texts offline: the query rules, the tokenizer, one
 * {@link TextEncoder#embed} per text, the scores and the argmax, the same steps as every reader
 * (runtime/classifier.py), so a phone and a laptop give a text the same label. It reads only the
 * released bundle: post-processing, so any number of queries costs no further privacy budget.
 *
 * <p>Construction embeds the bundle's check text and refuses an engine that computes another
 * embedding than the exporter's (do it off the UI thread). Every engine run happens on a worker
 * thread under the contract's budget of work (schema.json "encoder": load_run_seconds at load,
 * query_run_seconds per query of the worker's CPU time, times the caller's {@code timeScale} for a
 * slow device); when it runs out, {@link TextEncoder#cancel()} is called and the text is refused.
 */
public final class Classifier implements AutoCloseable {
    private static final long MAX_QUERY_CHARS = Contract.integer("query.max_chars");
    private static final double CHECK_MIN_COSINE = Contract.number("encoder.check_min_cosine");
    private static final double WALL_FACTOR = Contract.number("encoder.wall_factor");
    /** How often a run's clocks are read while it goes on. */
    private static final long POLL_NANOS = 20_000_000L;

    private final Bundle bundle;
    private final TextEncoder encoder;
    private final Tokenizer tokenizer;
    private final Scorer scorer;
    private final double querySeconds;
    private final double checkCosine;
    private final ExecutorService worker = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "dpedge-engine");
        t.setDaemon(true);
        return t;
    });

    /** {@link #Classifier(Bundle, TextEncoder, double)} with the contract's budgets as they are. */
    public Classifier(Bundle bundle, TextEncoder encoder) throws BundleException {
        this(bundle, encoder, 1.0);
    }

    /**
     * Prepares the bundle and verifies the engine on its check text.
     *
     * @param timeScale stretches every time budget (1 to 1000: an emulator runs the encoder 10 to
     *     50 times slower); the user's choice, never the bundle's
     * @throws BundleException {@code engine.load} when the engine fails on the check text,
     *     {@code engine.budget} when it takes longer than its budget, {@code engine.check} when
     *     its embedding is not the exporter's (cosine below the contract's minimum)
     */
    public Classifier(Bundle bundle, TextEncoder encoder, double timeScale) throws BundleException {
        this(bundle, encoder, Contract.number("encoder.load_run_seconds") * scale(timeScale),
                Contract.number("encoder.query_run_seconds") * scale(timeScale));
    }

    private static double scale(double timeScale) {
        if (!(timeScale >= 1 && timeScale <= 1000)) {
            throw new IllegalArgumentException("timeScale must be 1 to 1000, got " + timeScale);
        }
        return timeScale;
    }

    /** With explicit budgets in seconds (the tests' short ones). */
    Classifier(Bundle bundle, TextEncoder encoder, double loadSeconds, double querySeconds) throws BundleException {
        if (bundle == null || encoder == null) {
            throw new NullPointerException("bundle and encoder are required");
        }
        this.bundle = bundle;
        this.encoder = encoder;
        this.tokenizer = bundle.encoder().tokenizer();
        this.scorer = new Scorer(bundle);
        this.querySeconds = querySeconds;
        float[] ref = bundle.encoder().checkEmbedding;
        float[] emb;
        try {
            emb = run(tokenizer.encode(bundle.encoder().checkText()), loadSeconds);
        } catch (QueryException e) {
            worker.shutdownNow();
            String code = e.code().equals("query.embedding") ? "engine.check" : e.getCause() instanceof TimeoutException
                    ? "engine.budget" : "engine.load";
            throw new BundleException(code, code.equals("engine.check") ? "encoder.check_embedding" : "encoder.model",
                    "the bundle's encoder fails at load: " + e.rawMessage(), e);
        }
        double dot = 0;
        double a = 0;
        double b = 0;
        for (int i = 0; i < ref.length; i++) {
            dot += (double) emb[i] * ref[i];
            a += (double) emb[i] * emb[i];
            b += (double) ref[i] * ref[i];
        }
        checkCosine = dot / (Math.sqrt(a) * Math.sqrt(b) + 1e-12);
        if (!(checkCosine >= CHECK_MIN_COSINE)) {
            worker.shutdownNow();
            throw new BundleException("engine.check", "encoder.check_embedding", String.format(java.util.Locale.ROOT,
                    "the %s engine computes a different embedding than the exporter did for the bundle's check text "
                    + "(cosine %.3f < %s): it cannot run this encoder correctly, so its answers would be wrong",
                    bundle.encoder().format(), checkCosine, CHECK_MIN_COSINE));
        }
    }

    /**
     * The label and per-label scores of one text.
     *
     * @throws QueryException {@code query.type} (null), {@code query.too_long} (over the
     *     contract's code points), {@code query.unicode} (a lone surrogate), {@code query.empty}
     *     (no token), {@code query.engine} (the engine failed or exceeded its budget),
     *     {@code query.embedding} (not D finite floats)
     */
    public Prediction classify(String text) throws QueryException {
        return classifyEmbedding(embed(text));
    }

    /** The label and scores of an embedding computed elsewhere ({@link Bundle#dim()} finite values). */
    public Prediction classifyEmbedding(float[] embedding) throws QueryException {
        return new Prediction(bundle.labels(), scorer.scores(checked(embedding)));
    }

    /** The embedding of one text (the query rules, then the tokenizer and the encoder). */
    public float[] embed(String text) throws QueryException {
        return run(tokens(text), querySeconds);
    }

    /** The token ids the encoder gets for a text, after the query rules. */
    public int[] tokens(String text) throws QueryException {
        if (text == null) {
            throw new QueryException("query.type", "the text is not a string (null)");
        }
        if (text.length() > MAX_QUERY_CHARS && Text.length(text) > MAX_QUERY_CHARS) {
            throw new QueryException("query.too_long", "the text has " + Text.length(text) + " code points, more than "
                    + MAX_QUERY_CHARS);
        }
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (Character.isHighSurrogate(c) && i + 1 < text.length() && Character.isLowSurrogate(text.charAt(i + 1))) {
                i++;
            } else if (Character.isSurrogate(c)) {
                throw new QueryException("query.unicode", "the text is not valid Unicode: a lone surrogate "
                        + Text.uPlus(c) + " at index " + i);
            }
        }
        if (!tokenizer.hasToken(text)) {
            throw new QueryException("query.empty", "there is nothing to classify: the text is empty, or only white "
                    + "space, controls or invisible characters");
        }
        return tokenizer.encode(text);
    }

    private float[] checked(float[] emb) throws QueryException {
        if (emb == null || emb.length != bundle.dim()) {
            throw new QueryException("query.embedding", "the encoder returned " + (emb == null ? "null" : emb.length
                    + " values") + ", expected " + bundle.dim());
        }
        for (float x : emb) {
            if (!Float.isFinite(x)) {
                throw new QueryException("query.embedding", "the encoder returned a value that is not finite");
            }
        }
        return emb;
    }

    /**
     * One engine run on the worker, under its budget; {@link TextEncoder#cancel()} when it runs out.
     * The budget is work (schema.json "encoder"): the worker thread's CPU time, which other load on
     * the machine does not use up, with wall time as the backstop at wall_factor times it; where
     * the platform has no thread CPU clock (Android has no java.lang.management), wall time alone.
     */
    private float[] run(int[] ids, double seconds) throws QueryException {
        long[] start = {-1, -1};  // the worker thread's id and its CPU time when the run began
        Future<float[]> result;
        try {
            result = worker.submit(() -> {
                long id = Thread.currentThread().getId();
                start[1] = Cpu.nanos(id);
                start[0] = id;
                return encoder.embed(ids);
            });
        } catch (java.util.concurrent.RejectedExecutionException e) {
            throw new QueryException("query.engine", "this classifier is closed", e);
        }
        long budget = (long) (seconds * 1e9);
        long wallEnd = System.nanoTime() + (Cpu.AVAILABLE ? (long) (WALL_FACTOR * budget) : budget);
        try {
            while (true) {
                try {
                    return checked(result.get(POLL_NANOS, TimeUnit.NANOSECONDS));
                } catch (TimeoutException e) {
                    boolean overWork = start[0] >= 0 && start[1] >= 0 && Cpu.nanos(start[0]) - start[1] > budget;
                    if (overWork || System.nanoTime() > wallEnd) {
                        encoder.cancel();
                        result.cancel(true);
                        throw new QueryException("query.engine", "the encoder took more than its budget of "
                                + seconds + " s of work", e);
                    }
                }
            }
        } catch (ExecutionException e) {  // the engine's own exception is not chained: its text leaves escaped only
            throw new QueryException("query.engine", "the encoder failed on this text: " + e.getCause());
        } catch (InterruptedException e) {
            encoder.cancel();
            result.cancel(true);
            Thread.currentThread().interrupt();
            throw new QueryException("query.engine", "interrupted while the encoder ran", e);
        }
    }

    /** A thread's CPU time from the JVM's ThreadMXBean, touched only where that class exists. */
    private static final class Cpu {
        static final boolean AVAILABLE = available();

        private static boolean available() {
            try {
                java.lang.management.ThreadMXBean t = java.lang.management.ManagementFactory.getThreadMXBean();
                return t.isThreadCpuTimeSupported() && t.isThreadCpuTimeEnabled();
            } catch (LinkageError | UnsupportedOperationException e) {  // Android: no java.lang.management
                return false;
            }
        }

        /** CPU nanoseconds of thread ``id``, or -1 where they cannot be read. */
        static long nanos(long id) {
            return AVAILABLE ? java.lang.management.ManagementFactory.getThreadMXBean().getThreadCpuTime(id) : -1;
        }
    }

    /** The cosine between this engine's and the exporter's embedding of the check text. */
    public double checkCosine() {
        return checkCosine;
    }

    public Bundle bundle() {
        return bundle;
    }

    public Tokenizer tokenizer() {
        return tokenizer;
    }

    public Scorer scorer() {
        return scorer;
    }

    /** Ends the worker threads (the encoder is the caller's to close). */
    @Override
    public void close() {
        worker.shutdownNow();
    }
}
