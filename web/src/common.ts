/** What both entry points export besides their Classifier. */
export { checkText, type LabelScore, type LoadOptions, type Prediction } from "./classifier.js";
export { readContainer, Bin, type Value, type ValueMap } from "./container.js";
export { DELTA_STATEMENT, DELTA_SUMMARY, SCHEMA, UNICODE } from "./contract.js";
export { BudgetExceeded, WrongIO, type Engine, type EngineFactory, type EngineIO } from "./engine.js";
export { OnnxRuntimeEngine, type OrtModule, type OrtSession, type OrtSessionOptions, type OrtTensor } from "./engines/onnxruntime.js";
export { BundleError, DeploymentError, DpedgeError, InputError } from "./errors.js";
export { bundleInfo, privacySummary } from "./describe.js";
export { readBundle, readPack, type Bundle, type EncoderFamily, type EncoderFormat, type EncoderPack, type EncoderSpec, type PackOptions, type ReadOptions,
  type ReleaseFacts } from "./reader.js";
export { Scorer } from "./scoring.js";
export { escape, escapeJson, fold, labelKey, showsSomething, unassigned, unprintable } from "./text.js";
export { TextTokenizer } from "./tokenizer.js";
export { checkTokenizerJson } from "./tokenizer_family.js";
