/**
 * The web runtime's answers to a folder of questions from tests/fuzz/reader_agreement.py (the
 * differential fuzzing of the three readers): per bundle its refusal (code, path) or its labels,
 * token ids, hasToken and scores; per string the text rules. Reads the built runtime (dist/,
 * `npm run build`) and writes answers-web.json beside questions.json.
 *
 *     node scripts/answers.mjs DIR
 */
import { readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import * as dpedge from "../dist/index.js";

const dir = process.argv[2];
const q = JSON.parse(readFileSync(join(dir, "questions.json"), "utf-8"));

async function bundle(row) {
  let b;
  try {
    // The encoder pack given with the bundle (format 1.1), or none.
    const pack = row.pack ? await dpedge.readPack(readFileSync(row.pack)) : undefined;
    b = await dpedge.readBundle(readFileSync(join(dir, row.file)), { pack });
  } catch (e) {
    if (e instanceof dpedge.BundleError) return { code: e.code, path: e.path };
    throw e; // anything but a refusal is a finding of its own: the run fails, saying where
  }
  const texts = [...q.texts, ...row.texts];
  const tok = new dpedge.TextTokenizer(b.encoder.tokenizer, b.encoder.maxLength, b.encoder.textPrefix);
  const a = { labels: b.labels, ids: texts.map((t) => tok.encode(t)), has: texts.map((t) => tok.hasToken(t)) };
  if (row.x) a.scores = Array.from(new dpedge.Scorer(b).scores(Float32Array.from(row.x)));
  return a;
}

const rules = (s) => ({
  escaped: dpedge.escape(s), escaped_json: dpedge.escapeJson(JSON.stringify(s)), key: dpedge.labelKey(s),
  unprintable: dpedge.unprintable(s), unassigned: dpedge.unassigned(s), shows_something: dpedge.showsSomething(s),
});

const bundles = [];
for (const row of q.bundles) {
  try {
    bundles.push(await bundle(row));
  } catch (e) {
    console.error(`${row.file}: ${e?.stack ?? e}`);
    process.exit(1);
  }
}
const out = JSON.stringify({ bundles, strings: q.strings.map(rules) });
writeFileSync(join(dir, "answers-web.json.tmp"), out);
renameSync(join(dir, "answers-web.json.tmp"), join(dir, "answers-web.json"));
