package org.dpedge.core;

/**
 * The bundle cannot be used: not a bundle, truncated, corrupted, of another major version,
 * inconsistent, or its encoder cannot run here. The reader raises exactly this for every
 * malformed input, never a buffer or index exception from deep inside.
 */
public final class BundleException extends DpedgeException {
    private static final long serialVersionUID = 1L;

    public BundleException(String code, String path, String message) {
        super(code, path, message, null);
    }

    BundleException(String code, String path, String message, Throwable cause) {
        super(code, path, message, cause);
    }

    /** The same refusal with {@code prefix} (a file name) before its message. */
    BundleException within(String prefix) {
        return new BundleException(code(), path(), prefix + ": " + rawMessage(), this);
    }
}
