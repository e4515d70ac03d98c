package org.dpedge.demo;

import ai.onnxruntime.OnnxTensor;
import ai.onnxruntime.OrtEnvironment;
import ai.onnxruntime.OrtException;
import ai.onnxruntime.OrtSession;

import org.dpedge.core.Bundle;
import org.dpedge.core.TextEncoder;

import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Runs a bundle's ONNX encoder with ONNX Runtime Android, one text per call.
 *
 * <p>Feeds exactly the inputs the bundle declares ({@code input_ids}, and the all-ones
 * {@code attention_mask} and all-zeros {@code token_type_ids} when listed), int64, shape
 * [1, n], and reads the bundle's output ({@code sentence_embedding}, [1, dim], already pooled
 * and L2-normalised inside the graph).
 */
final class OnnxTextEncoder implements TextEncoder, AutoCloseable {
    private final OrtEnvironment env;
    private final OrtSession session;
    private final List<String> inputs;
    private final String output;

    OnnxTextEncoder(Bundle.Encoder spec, int threads) throws OrtException {
        env = OrtEnvironment.getEnvironment();
        OrtSession.SessionOptions options = new OrtSession.SessionOptions();
        options.setIntraOpNumThreads(threads);
        options.setOptimizationLevel(OrtSession.SessionOptions.OptLevel.ALL_OPT);
        session = env.createSession(spec.model(), options);
        inputs = spec.inputs();
        output = spec.output();
    }

    @Override
    public float[] embed(int[] tokenIds) throws OrtException {
        long[][] ids = new long[1][tokenIds.length];
        long[][] ones = new long[1][tokenIds.length];
        long[][] zeros = new long[1][tokenIds.length];
        for (int i = 0; i < tokenIds.length; i++) {
            ids[0][i] = tokenIds[i];
        }
        Arrays.fill(ones[0], 1L);
        Map<String, long[][]> values = new HashMap<>();
        values.put("input_ids", ids);
        values.put("attention_mask", ones);
        values.put("token_type_ids", zeros);
        Map<String, OnnxTensor> feeds = new HashMap<>();
        try {
            for (String name : inputs) {
                feeds.put(name, OnnxTensor.createTensor(env, values.get(name)));
            }
            try (OrtSession.Result result = session.run(feeds, java.util.Collections.singleton(output))) {
                float[][] embedding = (float[][]) result.get(0).getValue();
                return embedding[0];
            }
        } finally {
            for (OnnxTensor tensor : feeds.values()) {
                tensor.close();
            }
        }
    }

    @Override
    public void close() throws OrtException {
        session.close();
    }
}
