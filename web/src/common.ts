/** What both entry points export besides their Classifier. */
export { checkText, MAX_TEXT_CHARS, TFLITE_REFUSED, type LabelScore, type LoadOptions, type Prediction } from "./classifier.js";
export type { Engine, EngineFactory, EngineIO } from "./engine.js";
export { OnnxRuntimeEngine, type OrtModule } from "./engines/onnxruntime.js";
export { BundleError, DpedgeError, InputError } from "./errors.js";
export { bundleInfo, privacySummary } from "./describe.js";
export { readBundle, type Bundle, type EncoderSpec, type ReleaseFacts } from "./reader.js";
export { NEAR_ZERO, Scorer } from "./scoring.js";
export { escape, fold, unprintable } from "./text.js";
export { TextTokenizer } from "./tokenizer.js";
