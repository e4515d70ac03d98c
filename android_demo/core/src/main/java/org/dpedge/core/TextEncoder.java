package org.dpedge.core;

/**
 * The sentence encoder: token ids of one text in, its embedding out (the one native part, ONNX
 * Runtime or LiteRT, kept behind this seam so that the rest is plain Java).
 *
 * <p>Contract (docs/bundle-format.md section 6): one text per call, no padding; the ids include
 * the two special tokens ([CLS] and [SEP], or MPNet's {@code <s>} and {@code </s>}); ONNX gets
 * the bundle's {@code inputs} and no other ({@code input_ids} int64 [1, n], an all-ones
 * {@code attention_mask}, all-zeros {@code token_type_ids}: MPNet has none), TFLite int32
 * {@code input_ids} [1, n] in signature {@code serving_default}. The result has
 * {@code encoder.dim} finite values.
 *
 * <p>{@link Classifier} runs each call on a worker thread under the contract's budget of work
 * (schema.json "encoder": load_run_seconds for the check text, query_run_seconds per query);
 * when it runs out, it calls {@link #cancel()} from its own thread and refuses the text.
 */
public interface TextEncoder {
    /** The embedding of one tokenized text; any engine failure may be thrown as is. */
    float[] embed(int[] tokenIds) throws Exception;

    /**
     * Stops the run in progress, if the engine can (ONNX Runtime: {@code RunOptions.setTerminate});
     * called from another thread than {@link #embed}'s. The default does nothing: the run goes
     * on, abandoned, on its worker thread.
     */
    default void cancel() {
    }

    /**
     * The settings an ONNX engine must give every session (schema.json "encoder",
     * onnx_session_config: no constant folding, which runs while a session is created, where a load
     * cannot be stopped), as ONNX Runtime session config entries.
     */
    static java.util.Map<String, String> onnxSessionConfig() {
        java.util.Map<String, String> out = new java.util.LinkedHashMap<>();
        for (java.util.Map.Entry<String, Object> e : Contract.map("encoder.onnx_session_config").entrySet()) {
            out.put(e.getKey(), (String) e.getValue());
        }
        return out;
    }
}
