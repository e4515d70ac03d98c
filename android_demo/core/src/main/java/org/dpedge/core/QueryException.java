package org.dpedge.core;

/**
 * A text cannot be classified (not a string, too long, not valid Unicode, no token), or the
 * engine failed on it, exceeded its time budget or returned an embedding that is not D finite
 * floats. The bundle stays usable.
 */
public final class QueryException extends DpedgeException {
    private static final long serialVersionUID = 1L;

    public QueryException(String code, String message) {
        super(code, "", message, null);
    }

    QueryException(String code, String message, Throwable cause) {
        super(code, "", message, cause);
    }
}
