package org.dpedge.core;

/**
 * A refusal: a code (one of format/1/schema.json "errors", the same in every reader), a path
 * (the field it concerns, "" when none) and a message a person can act on. Readers agree on
 * codes and paths; the English is this reader's own. A message may quote text from a bundle or
 * an engine: {@link #getMessage()} shows it through {@link Text#escape}, so printing an error
 * never prints a raw control character.
 */
public class DpedgeException extends Exception {
    private static final long serialVersionUID = 1L;
    private final String code;
    private final String path;
    private final String message;

    DpedgeException(String code, String path, String message, Throwable cause) {
        super(message, cause);
        this.code = code;
        this.path = path;
        this.message = message;
    }

    /** The refusal's code, for example {@code field.missing}. */
    public String code() {
        return code;
    }

    /** The field it concerns, as docs/bundle-format.md section 8 writes it ("" when none). */
    public String path() {
        return path;
    }

    /** The message, escaped. */
    @Override
    public String getMessage() {
        return Text.escape(message);
    }

    /** The message as built, unescaped (for a caller that escapes it itself). */
    String rawMessage() {
        return message;
    }
}
