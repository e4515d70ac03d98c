package org.dpedge.core;

/**
 * The bundle cannot be used: not a bundle, truncated, corrupted, of an unknown major version,
 * or internally inconsistent.
 *
 * <p>Why one checked type: an app must be able to tell "this bundle file is bad" (show an
 * error, download it again) apart from a bad query and from a bug, and a checked exception
 * makes every caller of {@link BundleReader} decide. It mirrors the Python reader's single
 * {@code runtime.BundleError}: every malformed input raises exactly this, never a
 * msgpack, buffer or index exception from deep inside, and the message names the field
 * (for example {@code missing field 'privacy.epsilon'}) with the same key phrases as Python.
 */
public class BundleException extends Exception {
    private static final long serialVersionUID = 1L;

    public BundleException(String message) {
        super(message);
    }

    public BundleException(String message, Throwable cause) {
        super(message, cause);
    }
}
