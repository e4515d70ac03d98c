package org.dpedge.core;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The answer for one text: the label and every label's score (higher is better), in label
 * order: the summed noisy votes for a bundle of vote tables alone, else the blend of
 * {@link Scorer}.
 *
 * <p>Why a value class: apps show more than the winner (a top-3, a confidence bar), and the
 * scores are the only thing that explains a label; keeping them with the label means an app
 * never recomputes or reorders them.
 */
public final class Prediction {
    private final String label;
    private final int index;
    private final LinkedHashMap<String, Double> scores;

    Prediction(List<String> labels, double[] scores) {
        this.index = Scorer.argmax(scores);
        this.label = labels.get(index);
        this.scores = new LinkedHashMap<>();
        for (int c = 0; c < scores.length; c++) {
            this.scores.put(labels.get(c), scores[c]);
        }
    }

    /** The predicted label (argmax of the scores; ties go to the earlier label). */
    public String label() {
        return label;
    }

    /** The index of {@link #label()} in the bundle's labels. */
    public int labelIndex() {
        return index;
    }

    /** Every label's score, in the bundle's label order (a copy). */
    public LinkedHashMap<String, Double> scores() {
        return new LinkedHashMap<>(scores);
    }

    /** The k best labels with their scores, best first; ties keep label order. */
    public List<Map.Entry<String, Double>> top(int k) {
        List<Map.Entry<String, Double>> entries = new ArrayList<>(scores.entrySet());
        entries.sort((a, b) -> Double.compare(b.getValue(), a.getValue()));  // stable: ties keep order
        return Collections.unmodifiableList(entries.subList(0, Math.min(Math.max(1, k), entries.size())));
    }

    @Override
    public String toString() {
        return "Prediction{" + label + ", " + scores + "}";
    }
}
