package org.dpedge.core;

import java.util.Map;

/**
 * A validated encoder pack of format 1.1 (docs/bundle-format.md section 10): a file holding one
 * encoder, named by its SHA-256. A statistics bundle names its pack in {@code encoder_pack}
 * instead of carrying an encoder, and is read with it ({@link BundleReader#read(byte[], EncoderPack)});
 * the pack's encoder then runs its queries. Read one with {@link BundleReader#readPack}.
 */
public final class EncoderPack {
    final byte[] digest;
    final Bundle.Encoder encoder;
    /** The pack's checked values by path (the encoder paths), which stand for a statistics bundle's own. */
    final Map<String, Object> values;

    EncoderPack(byte[] digest, Bundle.Encoder encoder, Map<String, Object> values) {
        this.digest = digest;
        this.encoder = encoder;
        this.values = values;
    }

    /** The pack's SHA-256 (a copy): what a statistics bundle names in {@code encoder_pack}. */
    public byte[] digest() {
        return digest.clone();
    }

    /** The digest in lowercase hex, as people and the accepted digests of {@code readPack} write it. */
    public String sha256() {
        return hex(digest);
    }

    /** The encoder the pack holds: its model and weights are views of the pack's bytes. */
    public Bundle.Encoder encoder() {
        return encoder;
    }

    static String hex(byte[] bytes) {
        StringBuilder out = new StringBuilder();
        for (byte b : bytes) {
            out.append("0123456789abcdef".charAt((b >> 4) & 0xf)).append("0123456789abcdef".charAt(b & 0xf));
        }
        return out.toString();
    }
}
