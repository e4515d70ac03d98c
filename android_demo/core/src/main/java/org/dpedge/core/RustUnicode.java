package org.dpedge.core;

/**
 * The Unicode character classes of the Rust {@code tokenizers} library, which the Python
 * runtime tokenizes with.
 *
 * <p>Why: BertNormalizer and BertPreTokenizer decide "control", "non-spacing mark" and
 * "punctuation" with the Rust crate {@code unicode_categories}, whose tables are frozen at an
 * old Unicode version (8.0 or older: U+2E43, added in 9.0, is unknown to them), while Java's
 * {@link Character#getType} follows the platform's Unicode version (13.0 on JDK 17, 14 and
 * later on recent Android). Code points assigned or re-categorised since then are plain
 * letters to Rust: a newer combining mark is kept (and makes its word [UNK]) instead of being
 * stripped, a newer punctuation mark is not split off. Using Java's categories unchanged would
 * give such texts different token ids.
 *
 * <p>The tables below list, as inclusive {@code [first, last]} ranges, the code points whose
 * Unicode 14 category is Cc/Cf/Co/Cs, Mn or P* but which the Rust library does not treat so,
 * plus the three code points it classifies the old way (U+1734 as Mn, U+166D and U+111C9 as
 * punctuation). They were derived by tokenizing every code point with the Python
 * {@code tokenizers} 0.22 library (between letters, and between spaces) and comparing with
 * Python's {@code unicodedata} 14.0; the conformance tests hold the result to that library.
 * Characters added after Unicode 14 are not covered: on a platform whose Unicode is newer,
 * a text with such a mark or punctuation may still tokenize differently.
 */
final class RustUnicode {
    private RustUnicode() {
    }

    private static final int[] NOT_OTHER = {
        0x890, 0x891, 0x8E2, 0x8E2, 0x110CD, 0x110CD, 0x13430, 0x13438,
    };

    private static final int[] NOT_MN = {
        0x7FD, 0x7FD, 0x898, 0x89F, 0x8CA, 0x8E1, 0x9FE, 0x9FE, 0xAFA, 0xAFF, 0xB55, 0xB55, 0xC04, 0xC04,
        0xC3C, 0xC3C, 0xD00, 0xD00, 0xD3B, 0xD3C, 0xD81, 0xD81, 0xEBA, 0xEBA, 0x180F, 0x180F, 0x1885, 0x1886,
        0x1ABF, 0x1ACE, 0x1DF6, 0x1DFB, 0xA82C, 0xA82C, 0xA8C5, 0xA8C5, 0xA8FF, 0xA8FF, 0xA9BD, 0xA9BD,
        0x10D24, 0x10D27, 0x10EAB, 0x10EAC, 0x10F46, 0x10F50, 0x10F82, 0x10F85, 0x11070, 0x11070,
        0x11073, 0x11074, 0x110C2, 0x110C2, 0x111CF, 0x111CF, 0x1123E, 0x1123E, 0x1133B, 0x1133B,
        0x11438, 0x1143F, 0x11442, 0x11444, 0x11446, 0x11446, 0x1145E, 0x1145E, 0x1182F, 0x11837,
        0x11839, 0x1183A, 0x1193B, 0x1193C, 0x1193E, 0x1193E, 0x11943, 0x11943, 0x119D4, 0x119D7,
        0x119DA, 0x119DB, 0x119E0, 0x119E0, 0x11A01, 0x11A0A, 0x11A33, 0x11A38, 0x11A3B, 0x11A3E,
        0x11A47, 0x11A47, 0x11A51, 0x11A56, 0x11A59, 0x11A5B, 0x11A8A, 0x11A96, 0x11A98, 0x11A99,
        0x11C30, 0x11C36, 0x11C38, 0x11C3D, 0x11C3F, 0x11C3F, 0x11C92, 0x11CA7, 0x11CAA, 0x11CB0,
        0x11CB2, 0x11CB3, 0x11CB5, 0x11CB6, 0x11D31, 0x11D36, 0x11D3A, 0x11D3A, 0x11D3C, 0x11D3D,
        0x11D3F, 0x11D45, 0x11D47, 0x11D47, 0x11D90, 0x11D91, 0x11D95, 0x11D95, 0x11D97, 0x11D97,
        0x11EF3, 0x11EF4, 0x16F4F, 0x16F4F, 0x16FE4, 0x16FE4, 0x1CF00, 0x1CF2D, 0x1CF30, 0x1CF46,
        0x1E000, 0x1E006, 0x1E008, 0x1E018, 0x1E01B, 0x1E021, 0x1E023, 0x1E024, 0x1E026, 0x1E02A,
        0x1E130, 0x1E136, 0x1E2AE, 0x1E2AE, 0x1E2EC, 0x1E2EF, 0x1E944, 0x1E94A,
    };

    private static final int[] NOT_PUNCTUATION = {
        0x61D, 0x61D, 0x9FD, 0x9FD, 0xA76, 0xA76, 0xC77, 0xC77, 0xC84, 0xC84, 0x1B7D, 0x1B7E, 0x2E43, 0x2E4F,
        0x2E52, 0x2E5D, 0x10EAD, 0x10EAD, 0x10F55, 0x10F59, 0x10F86, 0x10F89, 0x1144B, 0x1144F,
        0x1145A, 0x1145B, 0x1145D, 0x1145D, 0x11660, 0x1166C, 0x116B9, 0x116B9, 0x1183B, 0x1183B,
        0x11944, 0x11946, 0x119E2, 0x119E2, 0x11A3F, 0x11A46, 0x11A9A, 0x11A9C, 0x11A9E, 0x11AA2,
        0x11C41, 0x11C45, 0x11C70, 0x11C71, 0x11EF7, 0x11EF8, 0x11FFF, 0x11FFF, 0x12FF1, 0x12FF2,
        0x16E97, 0x16E9A, 0x16FE2, 0x16FE2, 0x1E95E, 0x1E95F,
    };

    /** Category Cc, Cf, Co or Cs ("other", unassigned excluded) as the Rust library sees it. */
    static boolean isOther(int cp) {
        switch (Character.getType(cp)) {
            case Character.CONTROL:
            case Character.FORMAT:
            case Character.PRIVATE_USE:
            case Character.SURROGATE:
                return !inRanges(NOT_OTHER, cp);
            default:
                return false;
        }
    }

    /** Category Mn as the Rust library sees it. */
    static boolean isNonspacingMark(int cp) {
        if (cp == 0x1734) {
            return true;   // Mn until Unicode 14 made it Mc
        }
        if (cp == 0x111C9) {
            return false;  // punctuation until Unicode 13 made it Mn
        }
        return Character.getType(cp) == Character.NON_SPACING_MARK && !inRanges(NOT_MN, cp);
    }

    /** Category P* as the Rust library sees it. */
    static boolean isPunctuation(int cp) {
        if (cp == 0x166D || cp == 0x111C9) {
            return true;   // punctuation in older Unicode versions
        }
        switch (Character.getType(cp)) {
            case Character.CONNECTOR_PUNCTUATION:
            case Character.DASH_PUNCTUATION:
            case Character.START_PUNCTUATION:
            case Character.END_PUNCTUATION:
            case Character.INITIAL_QUOTE_PUNCTUATION:
            case Character.FINAL_QUOTE_PUNCTUATION:
            case Character.OTHER_PUNCTUATION:
                return !inRanges(NOT_PUNCTUATION, cp);
            default:
                return false;
        }
    }

    /** Whether cp lies in one of the sorted inclusive ranges {@code [a0, b0, a1, b1, ...]}. */
    private static boolean inRanges(int[] ranges, int cp) {
        int lo = 0;
        int hi = ranges.length / 2 - 1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            if (cp < ranges[2 * mid]) {
                hi = mid - 1;
            } else if (cp > ranges[2 * mid + 1]) {
                lo = mid + 1;
            } else {
                return true;
            }
        }
        return false;
    }
}
