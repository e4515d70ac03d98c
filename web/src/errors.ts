/**
 * The runtime's error types, as in runtime/errors.py: an app tells "this bundle is bad" from
 * "this text is bad" from a bug.
 */

/** Base class of every error the runtime raises on purpose. */
export class DpedgeError extends Error {
  override name = "DpedgeError"; // spelt out: a minifier renames classes
}

/**
 * The bundle cannot be used: not a bundle, truncated, corrupted, wrong version, inconsistent,
 * or its encoder cannot run here. Every malformed input ends in one of these, one line long.
 */
export class BundleError extends DpedgeError {
  override name = "BundleError";
}

/** A query text cannot be classified (not a string, empty, too long, not valid UTF-16). */
export class InputError extends DpedgeError {
  override name = "InputError";
}
