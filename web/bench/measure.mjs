/**
 * bench.mjs's measurement, one module for Node and the page (the page imports it from its own
 * origin): load a bundle, answer the first text, then each other text alone.
 *
 * @param Classifier either entry point's Classifier ("dpedge" or "dpedge/browser")
 * @param engine an EngineFactory, or undefined for the entry point's default
 * @returns {Promise<{engine: string, load: number, first: number, per: number[], labels: string[]}>} milliseconds
 */
export async function measure(Classifier, engine, bytes, texts) {
  const t0 = performance.now();
  const clf = await Classifier.load(bytes, engine ? { engine } : {});
  const t1 = performance.now();
  const labels = [(await clf.classify([texts[0]]))[0].label];
  const t2 = performance.now();
  const per = [];
  for (const t of texts.slice(1)) {
    const s = performance.now();
    labels.push((await clf.classify([t]))[0].label);
    per.push(performance.now() - s);
  }
  const name = clf.engineName;
  await clf.close();
  return { engine: name, load: t1 - t0, first: t2 - t1, per, labels };
}
