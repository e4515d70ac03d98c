package org.dpedge.demo;

import org.dpedge.core.Bundle;
import org.dpedge.core.TextEncoder;
import org.tensorflow.lite.Interpreter;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.HashMap;
import java.util.Map;

/**
 * Runs a bundle's TFLite encoder with LiteRT's Interpreter, one text per call.
 *
 * <p>The model has one signature, {@code serving_default}: int32 {@code input_ids} of shape
 * [1, n] with n dynamic (the interpreter resizes to each text's length, so a short text does
 * not pay for 128 tokens) and {@code sentence_embedding} [1, dim] out. A TFLite bundle has no
 * {@code encoder.weights}: the flatbuffer holds every buffer. The model bytes are copied once
 * into a direct buffer, which the interpreter requires and keeps. The interpreter is cancellable:
 * when a run outlives its time budget, the core's {@code Classifier} calls {@link #cancel()},
 * and LiteRT stops between two operators.
 */
final class LiteRtTextEncoder implements TextEncoder, AutoCloseable {
    private static final String SIGNATURE = "serving_default";

    private final Interpreter interpreter;
    private final String input;
    private final String output;
    private final int dim;

    LiteRtTextEncoder(Bundle.Encoder spec, int threads) {
        ByteBuffer model = ByteBuffer.allocateDirect(spec.model().length).order(ByteOrder.nativeOrder());
        model.put(spec.model()).rewind();
        Interpreter.Options options = new Interpreter.Options();
        options.setNumThreads(threads);
        options.setCancellable(true);
        interpreter = new Interpreter(model, options);
        input = spec.inputs().get(0);  // "input_ids": the only input of a TFLite bundle
        output = spec.output();
        dim = spec.dim();
    }

    @Override
    public synchronized float[] embed(int[] tokenIds) {
        interpreter.setCancelled(false);  // a run cancelled before this one left the flag set
        Map<String, Object> inputs = new HashMap<>();
        inputs.put(input, new int[][] {tokenIds});
        float[][] embedding = new float[1][dim];
        Map<String, Object> outputs = new HashMap<>();
        outputs.put(output, embedding);
        interpreter.runSignature(inputs, outputs, SIGNATURE);
        return embedding[0];
    }

    /** Stops the run in progress between two operators (from the core's watchdog thread). */
    @Override
    public void cancel() {
        interpreter.setCancelled(true);
    }

    @Override
    public void close() {
        interpreter.close();
    }
}
