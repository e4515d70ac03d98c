package org.dpedge.demo;

import ai.onnxruntime.OnnxTensor;
import ai.onnxruntime.OnnxTensorLike;
import ai.onnxruntime.OrtEnvironment;
import ai.onnxruntime.OrtException;
import ai.onnxruntime.OrtSession;

import org.dpedge.core.Bundle;
import org.dpedge.core.ModelFamily;
import org.dpedge.core.TextEncoder;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Runs a bundle's ONNX encoder with ONNX Runtime Android, one text per call.
 *
 * <p>The model's initializers keep their data in {@code encoder.weights} as ONNX external data
 * under a placeholder location (docs/bundle-format.md section 6). ONNX Runtime's Java API has no
 * counterpart of the C API's AddExternalInitializersFromFilesInMemory (which takes the weights as
 * one in-memory file under the placeholder's name); it has
 * {@code SessionOptions.addExternalInitializers(Map<String, OnnxTensorLike>)} (ONNX Runtime
 * 1.16 and later), which replaces each initializer that has external data by a tensor given by
 * name. So each initializer the core listed ({@link Bundle.Encoder#externalData()}: name, data
 * type, dims, and its range of {@link Bundle.Encoder#weights()}) becomes a tensor over its slice
 * of the weights; the session copies them at creation, after which they are closed.
 *
 * <p>Feeds exactly the inputs the bundle declares ({@code input_ids}, and the all-ones
 * {@code attention_mask} and all-zeros {@code token_type_ids} when listed), int64, shape [1, n],
 * and reads the bundle's output ({@code sentence_embedding}, [1, dim], pooled and L2-normalised
 * inside the graph).
 *
 * <p>Each run has its own {@link OrtSession.RunOptions}: when a run outlives its time budget,
 * the core's {@code Classifier} calls {@link #cancel()} from its waiting (watchdog) thread, which
 * sets the terminate flag of the runs in progress, and ONNX Runtime ends them with an error.
 */
final class OnnxTextEncoder implements TextEncoder, AutoCloseable {
    private final OrtEnvironment env;
    private final OrtSession session;
    private final List<String> inputs;
    private final String output;
    /** The options of the runs in progress (guarded by itself): cancel() terminates them. */
    private final Set<OrtSession.RunOptions> running = new HashSet<>();

    OnnxTextEncoder(Bundle.Encoder spec, int threads) throws OrtException {
        env = OrtEnvironment.getEnvironment();
        Map<String, OnnxTensorLike> weights = new HashMap<>();
        try (OrtSession.SessionOptions options = new OrtSession.SessionOptions()) {
            options.setIntraOpNumThreads(threads);
            options.setOptimizationLevel(OrtSession.SessionOptions.OptLevel.ALL_OPT);
            for (Map.Entry<String, String> e : TextEncoder.onnxSessionConfig().entrySet()) {
                options.addConfigEntry(e.getKey(), e.getValue());  // the contract's: no constant folding
            }
            ByteBuffer all = spec.weights();
            for (ModelFamily.ExternalData x : spec.externalData()) {
                weights.put(x.name, tensor(all, x));
            }
            options.addExternalInitializers(weights);
            session = env.createSession(spec.model(), options);
        } finally {
            for (OnnxTensorLike t : weights.values()) {
                t.close();  // the session holds its own copy
            }
        }
        inputs = spec.inputs();
        output = spec.output();
    }

    /** A tensor over one initializer's bytes of encoder.weights (little-endian, as ONNX stores them). */
    private OnnxTensor tensor(ByteBuffer all, ModelFamily.ExternalData x) throws OrtException {
        ByteBuffer bytes = all.duplicate();
        bytes.position((int) x.offset);
        bytes.limit((int) (x.offset + x.length));
        ByteBuffer slice = bytes.slice().order(ByteOrder.LITTLE_ENDIAN);
        switch (x.dataType) {  // onnx TensorProto.DataType: the types the exporter's encoders use
            case 1:
                return OnnxTensor.createTensor(env, slice.asFloatBuffer(), x.dims);
            case 2:
                return OnnxTensor.createTensor(env, slice, x.dims, ai.onnxruntime.OnnxJavaType.UINT8);
            case 3:
                return OnnxTensor.createTensor(env, slice, x.dims, ai.onnxruntime.OnnxJavaType.INT8);
            case 6:
                return OnnxTensor.createTensor(env, slice.asIntBuffer(), x.dims);
            case 7:
                return OnnxTensor.createTensor(env, slice.asLongBuffer(), x.dims);
            default:
                throw new IllegalArgumentException("initializer " + x.name + " has ONNX data type " + x.dataType
                        + ", which this app does not load");
        }
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
        OrtSession.RunOptions options = new OrtSession.RunOptions();
        synchronized (running) {
            running.add(options);
        }
        try {
            for (String name : inputs) {
                feeds.put(name, OnnxTensor.createTensor(env, values.get(name)));
            }
            try (OrtSession.Result result = session.run(feeds, Collections.singleton(output), options)) {
                float[][] embedding = (float[][]) result.get(0).getValue();
                return embedding[0];
            }
        } finally {
            synchronized (running) {  // never closed while cancel() sets its flag
                running.remove(options);
                options.close();
            }
            for (OnnxTensor tensor : feeds.values()) {
                tensor.close();
            }
        }
    }

    /** Terminates the runs in progress (called by the core's watchdog when a run outlives its budget). */
    @Override
    public void cancel() {
        synchronized (running) {
            for (OrtSession.RunOptions options : running) {
                try {
                    options.setTerminate(true);
                } catch (OrtException e) {
                    // the run ends on its own; the core has refused the text already
                }
            }
        }
    }

    @Override
    public void close() throws OrtException {
        session.close();
    }
}
