package org.dpedge.core;

/**
 * The sentence encoder: token ids of one text in, its embedding out.
 *
 * <p>Why an interface: the encoder is the one native part (ONNX Runtime Android or LiteRT,
 * loaded from {@link Bundle.Encoder#model()}), and keeping it behind this seam leaves the
 * rest of the library plain Java that runs and is tested on any JVM.
 *
 * <p>Contract (bundle format section 6): one text per call, no padding; the ids include
 * [CLS] and [SEP]; ONNX gets {@code input_ids} (int64 {@code [1, n]}), {@code attention_mask} all
 * ones and {@code token_type_ids} all zeros as the bundle's {@code inputs} list; a TFLite model
 * gets only int32 {@code input_ids} resized to {@code [1, n]} in signature
 * {@code serving_default}. The result has {@link Bundle.Encoder#dim()} values (L2-normalised
 * inside the graph). One text per call matters: int8 kernels give a text slightly different
 * results inside a batch, and the exporter embedded every record alone.
 */
public interface TextEncoder {
    /** The embedding of one tokenized text; any engine failure may be thrown as is. */
    float[] embed(int[] tokenIds) throws Exception;
}
