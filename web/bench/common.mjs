/**
 * What the two Node benches (bench.mjs, worker.mjs) share: their command-line options, the
 * median, and the Python runtime measured on the same bundle and texts, the baseline every
 * ratio is taken against in the same run.
 */
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const WEB = fileURLToPath(new URL("..", import.meta.url));
export const ROOT = join(WEB, "..");

/** The value after ``name`` on the command line, else ``fallback``. */
export function arg(name, fallback) {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : fallback;
}

/** The median of ``xs`` (NaN for none). */
export function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

/**
 * The Python runtime (``python``: its interpreter) on ``bundle`` and ``texts``, in a child
 * process: load, the first text's answer, then each other text alone, in milliseconds.
 * ``threads``: the engine's threads (undefined: its default). ``embedTexts``: texts whose
 * embeddings (unit vectors) are returned too, computed after the timed part.
 * @returns {{engine: string, load: number, first: number, per: number[], labels: string[], embeddings?: number[][]}}
 */
export function measurePython(python, bundle, texts, threads, embedTexts = []) {
  const code = `
import json, sys, time
from runtime import Classifier
texts, embed_texts = json.load(sys.stdin)
threads = json.loads(sys.argv[2])
t0 = time.perf_counter()
clf = Classifier.load(sys.argv[1]) if threads is None else Classifier.load(sys.argv[1], threads=threads)
t1 = time.perf_counter()
labels = [clf.classify(texts[:1])[0].label]
t2 = time.perf_counter()
per = []
for t in texts[1:]:
    s = time.perf_counter()
    labels.append(clf.classify([t])[0].label)
    per.append((time.perf_counter() - s) * 1000)
import onnxruntime
engine = f"onnxruntime {onnxruntime.__version__} (Python" + ("" if threads is None else f", {threads} thread" + ("s" if threads > 1 else "")) + ")"
embeddings = clf.embed(embed_texts).tolist() if embed_texts else None
print(json.dumps({"engine": engine, "load": (t1 - t0) * 1000, "first": (t2 - t1) * 1000, "per": per, "labels": labels, "embeddings": embeddings}))
`;
  const r = spawnSync(python, ["-c", code, bundle, JSON.stringify(threads ?? null)], { cwd: ROOT, input: JSON.stringify([texts, embedTexts]),
    encoding: "utf-8", env: { ...process.env, HF_HUB_OFFLINE: "1" }, maxBuffer: 1 << 26 });
  if (r.status !== 0) throw new Error(`the Python runtime failed (${python}):\n${r.stderr}`);
  return JSON.parse(r.stdout.trim().split("\n").pop());
}
