/**
 * The runtime's errors: every refusal is a code (one of schema.json "errors", the same in
 * every reader), a path (the field it concerns; "" for the container and for queries) and a
 * message in this runtime's own words. The message may quote text from a bundle, an engine or
 * a query, so it is escaped here, once: printing an error never prints a raw control character.
 */
import { escape } from "./text.js";

/** Base class of every error the runtime raises on purpose. */
export class DpedgeError extends Error {
  override name = "DpedgeError"; // spelt out: a minifier renames classes

  constructor(readonly code: string, readonly path: string, message: string) {
    super(escape(message));
  }
}

/** The bundle cannot be used: not a bundle, corrupted, outside the format, or its encoder cannot run here. */
export class BundleError extends DpedgeError {
  override name = "BundleError";
}

/** A query cannot be classified (not a string, too long, not valid Unicode, no token), or the engine failed on it. */
export class InputError extends DpedgeError {
  override name = "InputError";
}

/**
 * The runtime is not deployed as it needs to be, and no bundle is at fault: an engine's package is
 * not installed, or onnxruntime-web's WebAssembly files are not served where they are looked
 * for. Code `engine.deployment`, path "" (not one of schema.json "errors": those are the
 * readers' refusals of a bundle or a query). The message names the package or the file, and the
 * fix.
 */
export class DeploymentError extends DpedgeError {
  override name = "DeploymentError";

  constructor(message: string) {
    super("engine.deployment", "", message);
  }
}

/**
 * The fix a DeploymentError of dpedge/worker's Web Worker names (its script not loaded, or not
 * bundled with its imports): how each bundler runs the worker.
 */
export const WORKER_BUNDLING_FIX = "Vite and webpack 5 bundle dpedge/worker's own worker when WorkerClassifier.load is " +
  "given no `worker` option; with esbuild (or any bundler that does not bundle new Worker(new URL(...)) in a dependency) " +
  "build \"dpedge/worker-script\" as an entry of its own and give its URL: " +
  "WorkerClassifier.load(bytes, { worker: new URL(\"./worker-script.js\", import.meta.url) }) (dpedge's web README, \"In a Web Worker\")";
