package org.dpedge.core;

import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;

/**
 * The contract's Unicode (format/1/unicode.json): character sets, canonical and compatibility
 * decomposition with canonical ordering and Hangul, full lowercase and UTS #39 prototypes of
 * one pinned version, on code points. No platform Unicode function decides anything here
 * (the JDK's tables are another version).
 */
final class Unicode {
    private static final Map<String, Object> TABLES = Contract.load("unicode.json");
    static final String VERSION = (String) TABLES.get("unicode_version");

    /** A set of code points given as flat inclusive ranges {@code [lo, hi, lo, hi, ...]}. */
    static final class Set {
        private final int[] lo;
        private final int[] hi;

        Set(int[] flat) {
            lo = new int[flat.length / 2];
            hi = new int[flat.length / 2];
            for (int i = 0; i < lo.length; i++) {
                lo[i] = flat[2 * i];
                hi[i] = flat[2 * i + 1];
            }
        }

        /** The set of the given code points (each its own range; sorted here). */
        static Set of(int[] codePoints) {
            int[] sorted = codePoints.clone();
            Arrays.sort(sorted);
            int[] flat = new int[2 * sorted.length];
            for (int i = 0; i < sorted.length; i++) {
                flat[2 * i] = flat[2 * i + 1] = sorted[i];
            }
            return new Set(flat);
        }

        /** The index of the range holding cp, or -1. */
        int find(int cp) {
            int i = Arrays.binarySearch(lo, cp);
            i = i >= 0 ? i : -i - 2;
            return i >= 0 && cp <= hi[i] ? i : -1;
        }

        boolean contains(int cp) {
            return find(cp) >= 0;
        }

        /** The first code point of s in the set, or -1. */
        int first(String s) {
            for (int i = 0; i < s.length(); ) {
                int cp = s.codePointAt(i);
                if (contains(cp)) {
                    return cp;
                }
                i += Character.charCount(cp);
            }
            return -1;
        }
    }

    static Set set(String name) {
        return new Set(Contract.ints(((Map<?, ?>) TABLES.get("sets")).get(name)));
    }

    static final Set CONTROL = set("control");
    static final Set WHITESPACE = set("whitespace");
    static final Set PUNCTUATION = set("punctuation");
    static final Set NONSPACING_MARK = set("nonspacing_mark");
    static final Set UNASSIGNED = set("unassigned");
    static final Set DEFAULT_IGNORABLE = set("default_ignorable");
    static final Set BLANK = set("blank");

    private static final Map<Integer, int[]> CANONICAL = mapping("decomposition", null);
    private static final Map<Integer, int[]> COMPATIBILITY = mapping("compatibility", CANONICAL);
    private static final Map<Integer, int[]> LOWERCASE = mapping("lowercase", null);
    private static final Map<Integer, int[]> CONFUSABLE = mapping("confusable", null);
    private static final Set NON_STARTERS;
    private static final int[] COMBINING_CLASS;

    static {
        int[] flat = Contract.ints(TABLES.get("combining_class"));
        int[] ranges = new int[flat.length / 3 * 2];
        COMBINING_CLASS = new int[flat.length / 3];
        for (int i = 0; i < COMBINING_CLASS.length; i++) {
            ranges[2 * i] = flat[3 * i];
            ranges[2 * i + 1] = flat[3 * i + 1];
            COMBINING_CLASS[i] = flat[3 * i + 2];
        }
        NON_STARTERS = new Set(ranges);
    }

    private static final int S_BASE = 0xAC00;
    private static final int L_BASE = 0x1100;
    private static final int V_BASE = 0x1161;
    private static final int T_BASE = 0x11A7;
    private static final int T_COUNT = 28;
    private static final int N_COUNT = 21 * T_COUNT;
    private static final int S_COUNT = 19 * N_COUNT;

    private Unicode() {
    }

    /** {@code [cp, n, c1..cn, ...]} as a map, over {@code base} when given. */
    private static Map<Integer, int[]> mapping(String name, Map<Integer, int[]> base) {
        int[] flat = Contract.ints(TABLES.get(name));
        Map<Integer, int[]> out = base == null ? new HashMap<>() : new HashMap<>(base);
        for (int i = 0; i < flat.length; i += 2 + flat[i + 1]) {
            out.put(flat[i], Arrays.copyOfRange(flat, i + 2, i + 2 + flat[i + 1]));
        }
        return out;
    }

    static int[] codePoints(String s) {
        return s.codePoints().toArray();
    }

    static String string(int[] cps) {
        return new String(cps, 0, cps.length);
    }

    /** Each code point replaced by its mapping (itself without one). */
    private static int[] map(int[] cps, Map<Integer, int[]> table, boolean hangul) {
        int[] out = new int[cps.length];
        int n = 0;
        for (int cp : cps) {
            int[] to = table.get(cp);
            if (hangul && cp >= S_BASE && cp < S_BASE + S_COUNT) {
                int s = cp - S_BASE;
                to = s % T_COUNT == 0 ? new int[] {L_BASE + s / N_COUNT, V_BASE + (s % N_COUNT) / T_COUNT}
                        : new int[] {L_BASE + s / N_COUNT, V_BASE + (s % N_COUNT) / T_COUNT, T_BASE + s % T_COUNT};
            }
            if (to == null) {
                to = new int[] {cp};
            }
            if (n + to.length > out.length) {
                out = Arrays.copyOf(out, Math.max(2 * out.length, n + to.length));
            }
            System.arraycopy(to, 0, out, n, to.length);
            n += to.length;
        }
        return Arrays.copyOf(out, n);
    }

    /** Canonical ordering: every run of non-starters sorted by combining class, stably (in place). */
    private static int[] reorder(int[] cps) {
        for (int i = 1; i < cps.length; i++) {
            int cp = cps[i];
            int c = combiningClass(cp);
            int j = i;
            for (; c != 0 && j > 0 && combiningClass(cps[j - 1]) > c; j--) {  // insertion sort: stable
                cps[j] = cps[j - 1];
            }
            cps[j] = cp;
        }
        return cps;
    }

    static int combiningClass(int cp) {
        int i = NON_STARTERS.find(cp);
        return i < 0 ? 0 : COMBINING_CLASS[i];
    }

    /** Canonical decomposition (NFD). */
    static int[] nfd(int[] cps) {
        return reorder(map(cps, CANONICAL, true));
    }

    /** Compatibility decomposition (NFKD). */
    static int[] nfkd(int[] cps) {
        return reorder(map(cps, COMPATIBILITY, true));
    }

    /** Each code point's full lowercase mapping, without context. */
    static int[] lower(int[] cps) {
        return map(cps, LOWERCASE, false);
    }

    /** Each code point's UTS #39 prototype. */
    static int[] prototypes(int[] cps) {
        return map(cps, CONFUSABLE, false);
    }

    /** The code points not in {@code set}. */
    static int[] remove(int[] cps, Set set) {
        int[] out = new int[cps.length];
        int n = 0;
        for (int cp : cps) {
            if (!set.contains(cp)) {
                out[n++] = cp;
            }
        }
        return Arrays.copyOf(out, n);
    }
}
