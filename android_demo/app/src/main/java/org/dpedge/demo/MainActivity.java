package org.dpedge.demo;

import android.app.Activity;
import android.os.Bundle;
import android.os.Handler;
import android.os.Looper;
import android.view.ViewGroup;
import android.widget.Button;
import android.widget.EditText;
import android.widget.LinearLayout;
import android.widget.ScrollView;
import android.widget.TextView;

import org.dpedge.core.BundleReader;
import org.dpedge.core.Classifier;
import org.dpedge.core.DpedgeException;
import org.dpedge.core.EncoderPack;
import org.dpedge.core.HeadFacts;
import org.dpedge.core.Prediction;
import org.dpedge.core.PrivacyFacts;
import org.dpedge.core.QueryException;
import org.dpedge.core.Text;
import org.dpedge.core.TextEncoder;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * Type a text, get its label and every label's score, offline, from assets/bundle.dpedge (a
 * statistics bundle, format 1.1, with the encoder pack it names as assets/encoder.dpedge-encoder).
 *
 * <p>The bundle is read, the engine created and the check text verified on a background
 * thread (about a second on a phone), and every query runs there too: the UI thread only
 * shows results. Every text that comes from the bundle or an engine (labels, the privacy
 * statements, an engine's error, which may quote the model's names) passes {@link Text#escape}
 * before it is shown (the core's refusals come escaped: {@link DpedgeException#getMessage()}).
 * Each engine run has the contract's time budget; the core cancels a run that outlives it.
 * The layout is built in code to keep the demo to a few files.
 */
public final class MainActivity extends Activity {
    private static final String ASSET = "bundle.dpedge";
    /** The encoder pack of a statistics bundle (1.1), when the app ships one (not with an own-encoder bundle). */
    private static final String PACK_ASSET = "encoder.dpedge-encoder";
    private static final int THREADS = 2;

    private final ExecutorService worker = Executors.newSingleThreadExecutor();
    private final Handler ui = new Handler(Looper.getMainLooper());
    private volatile Classifier classifier;
    private AutoCloseable engine;
    private TextView status;
    private TextView result;
    private Button classify;

    @Override
    protected void onCreate(Bundle state) {
        super.onCreate(state);
        LinearLayout column = new LinearLayout(this);
        column.setOrientation(LinearLayout.VERTICAL);
        int pad = (int) (16 * getResources().getDisplayMetrics().density);
        column.setPadding(pad, pad, pad, pad);
        status = new TextView(this);
        status.setText("Loading " + ASSET + "...");
        EditText input = new EditText(this);
        input.setHint("Type a text to classify");
        classify = new Button(this);
        classify.setText("Classify");
        classify.setEnabled(false);
        result = new TextView(this);
        result.setTextIsSelectable(true);
        column.addView(status);
        column.addView(input, new LinearLayout.LayoutParams(ViewGroup.LayoutParams.MATCH_PARENT,
                ViewGroup.LayoutParams.WRAP_CONTENT));
        column.addView(classify);
        column.addView(result);
        ScrollView scroll = new ScrollView(this);
        scroll.addView(column);
        setContentView(scroll);

        classify.setOnClickListener(v -> {
            String text = input.getText().toString();
            worker.execute(() -> show(result, describe(text)));
        });
        worker.execute(this::load);
    }

    private void load() {
        try {
            EncoderPack pack = Arrays.asList(getAssets().list("")).contains(PACK_ASSET)
                    ? BundleReader.readPack(readAsset(PACK_ASSET)) : null;
            org.dpedge.core.Bundle bundle = BundleReader.read(readAsset(ASSET), pack);
            String format = bundle.encoder().format();
            TextEncoder encoder = "tflite".equals(format)
                    ? new LiteRtTextEncoder(bundle.encoder(), THREADS)
                    : new OnnxTextEncoder(bundle.encoder(), THREADS);
            engine = (AutoCloseable) encoder;
            // Embeds the check text at load: refuses an engine that computes other embeddings than
            // the exporter's (engine.check), fails on it (engine.load) or is too slow (engine.budget).
            classifier = new Classifier(bundle, encoder);
            // The guarantee in the core's words: epsilon, delta (with a head, 1.1, in the contract's
            // words and never "pure"), the unit, each release's share and B when it is over 1 (section 5).
            StringBuilder facts = new StringBuilder().append(bundle.labels().size()).append(" labels, ").append(format)
                    .append(" encoder (").append(bundle.encoder().family()).append(")\n")  // family: 1.2, bert or mpnet
                    .append(Text.escape(bundle.privacySummary()));
            if (bundle.delta() > 0) {  // an approximate guarantee: what delta is, the contract's statement
                facts.append("\nwhat delta is: ").append(org.dpedge.core.Bundle.deltaStatement());
            }
            for (PrivacyFacts r : bundle.releases().values()) {
                facts.append(String.format(java.util.Locale.ROOT, "%n%s: epsilon %.4g, sensitivity %d, noise scale %.4g",
                        r.statistic(), r.epsilon(), r.sensitivityL1(), r.noiseScale()));
            }
            HeadFacts h = bundle.head();
            if (h != null) {  // an (epsilon, delta) release: it alone scores
                facts.append(String.format(java.util.Locale.ROOT, "%nhead: epsilon %.4g, delta %.3g, L2 sensitivity %d, "
                        + "noise scale %.4g, %d steps at sample rate %.4g", h.epsilon(), h.delta(), h.sensitivityL2(),
                        h.noiseScale(), h.steps(), h.sampleRate()));
            }
            ui.post(() -> {
                status.setText(facts);
                classify.setEnabled(true);
            });
        } catch (DpedgeException e) {
            show(status, "Cannot use " + ASSET + " (" + e.code() + "): " + e.getMessage());
        } catch (Exception e) {
            show(status, "Cannot use " + ASSET + ": " + Text.escape(String.valueOf(e.getMessage())));
        }
    }

    private String describe(String text) {
        try {
            Prediction answer = classifier.classify(text);
            StringBuilder out = new StringBuilder(Text.escape(answer.label())).append('\n');
            // Vote sums (vote tables alone) are whole numbers; the blended scores are small reals.
            String row = classifier.scorer().plainVotes() ? "  %-24s %10.1f%n" : "  %-24s %10.4f%n";
            for (Map.Entry<String, Double> e : answer.top(answer.scores().size())) {
                out.append(String.format(java.util.Locale.ROOT, row, Text.escape(e.getKey()), e.getValue()));
            }
            return out.toString();
        } catch (QueryException e) {
            return e.getMessage();  // escaped: an empty or oversized text, or the engine failed on it
        }
    }

    private void show(TextView view, String text) {
        ui.post(() -> view.setText(text));
    }

    private byte[] readAsset(String name) throws IOException {
        try (InputStream in = getAssets().open(name)) {
            ByteArrayOutputStream bytes = new ByteArrayOutputStream(in.available() > 0 ? in.available() : 1 << 20);
            byte[] buffer = new byte[1 << 16];
            for (int n; (n = in.read(buffer)) > 0; ) {
                bytes.write(buffer, 0, n);
            }
            return bytes.toByteArray();
        }
    }

    @Override
    protected void onDestroy() {
        worker.shutdownNow();
        if (classifier != null) {
            classifier.close();
        }
        if (engine != null) {
            try {
                engine.close();
            } catch (Exception ignored) {
                // the process is going away; nothing to report to
            }
        }
        super.onDestroy();
    }
}
