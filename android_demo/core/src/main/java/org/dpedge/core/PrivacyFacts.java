package org.dpedge.core;

import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

import org.dpedge.core.Fields.Kind;

/**
 * The checks that a bundle's privacy facts agree with each other (Python's
 * {@code _check_releases}, {@code _check_scale} and {@code _check_noise_scale} in
 * {@code runtime/bundle/reader.py}; {@code docs/bundle-format.md} section 3).
 *
 * <p>Why: a reader cannot prove that noise was added, but it can refuse a bundle whose own
 * statements contradict each other (a stated epsilon of 1 with the noise scales of epsilon 8, a
 * scale of 0, shares that do not add up), with Python's messages, so a phone refuses what a
 * laptop refuses. Numbers are compared with Python's {@code math.isclose} at a relative
 * tolerance of {@link #PRIVACY_RTOL}, since the writer derives them by float arithmetic.
 */
final class PrivacyFacts {
    /** Relative tolerance of the comparisons (Python's PRIVACY_RTOL). */
    static final double PRIVACY_RTOL = 1e-9;
    /** The statistics a bundle can release (Python's {@code Statistic}): the vote tables... */
    static final String VOTES = "votes";
    /** ...format 2's class statistics in one release... */
    static final String CLASS_STATS = "class_stats";
    /** ...and format 3's class counts, then class sums. */
    static final String CLASS_COUNTS = "class_counts";
    static final String CLASS_SUMS = "class_sums";

    /**
     * A release's {@code grid} when it is one a reader may compute with, an integer from 1 to
     * 2^31, else 0 ({@code runtime/bundle/schema.py} stated_grid). Why one method: the class
     * sums' sensitivity check and the pull's noise units ({@link Scorer#sumsNoiseNorm}) must read
     * the same grid.
     */
    static long statedGrid(Object grid) {
        return grid instanceof Long && (Long) grid >= 1 && (Long) grid <= (1L << 31) ? (Long) grid : 0;
    }

    private PrivacyFacts() {
    }

    /**
     * The {@code privacy.releases} of formats 2 and 3 (Python's {@code _check_releases}): each
     * released statistic with its share of epsilon (required when the bundle has class
     * statistics, checked whenever present). Each entry's fields are type-checked in Python's
     * order: statistic, epsilon, sensitivity_l1, noise_scale (a float or integer, not a boolean:
     * the scale of the noise a reader needs to judge the release), mechanism. Every statistic
     * the bundle holds must be listed: {@code votes} with vote tables; the class statistics as
     * format 2's one {@code class_stats} release or format 3's {@code class_counts} and
     * {@code class_sums}. The shares must add up to the bundle's epsilon, and each release's
     * noise scale must be its sensitivity over its share.
     */
    static void checkReleases(Fields privacy, double eps, boolean hasClassStats, boolean hasVotes, Object perUnit)
            throws BundleException {
        List<?> releases = (List<?>) (hasClassStats ? privacy.get("releases", Kind.ARRAY)
                : privacy.optional("releases", Kind.ARRAY));
        if (releases == null) {
            return;
        }
        List<Object> names = new ArrayList<>();
        double total = 0;
        for (int i = 0; i < releases.size(); i++) {
            Fields f = new Fields(releases.get(i), "privacy.releases[" + i + "]");
            names.add(f.string("statistic"));
            Object share = f.get("epsilon", Kind.FLOAT, Kind.INTEGER);
            f.integer("sensitivity_l1");
            f.get("noise_scale", Kind.FLOAT, Kind.INTEGER);
            f.string("mechanism");
            double s = Fields.toDouble(share);
            boolean positive = share instanceof BigInteger || s > 0 && !Double.isInfinite(s);  // NaN fails too
            if (!positive) {
                throw new BundleException("field 'privacy.releases[" + i + "].epsilon' must be positive, got "
                        + (share instanceof Double ? Msgpack.pyFloat(s) : share.toString()));
            }
            total += s;
        }
        List<String> needed = new ArrayList<>();
        if (hasVotes) {
            needed.add(VOTES);
        }
        if (hasClassStats) {
            needed.addAll(names.contains(CLASS_STATS) ? Arrays.asList(CLASS_STATS)
                    : Arrays.asList(CLASS_COUNTS, CLASS_SUMS));
        }
        if (!names.containsAll(needed)) {
            throw new BundleException("field 'privacy.releases' must list every released statistic, got "
                    + Msgpack.repr(names));
        }
        if (!isClose(total, eps)) {
            throw new BundleException("the releases spend epsilon " + Msgpack.pyFloat(total)
                    + ", but field 'privacy.epsilon' is " + Msgpack.pyFloat(eps) + ": their shares must add up to it");
        }
        for (int i = 0; i < releases.size(); i++) {
            Map<?, ?> r = (Map<?, ?>) releases.get(i);
            checkScale("privacy.releases[" + i + "].", r.get("sensitivity_l1"), r.get("noise_scale"),
                    Fields.toDouble(r.get("epsilon")));
            checkPersonBound(r, "privacy.releases[" + i + "].", perUnit);
        }
    }

    /**
     * A release states the person bound K it was made under (if it names one, the bundle's),
     * and a format-3 class release's sensitivity is K times one record's: 1 for
     * {@code class_counts}, round(grid x clip_l1) for {@code class_sums} when it states a grid
     * of 1 to 2^31 and a clip whose product with it is in (0, 2^53) (Python's
     * {@code _check_person_bound}).
     */
    private static void checkPersonBound(Map<?, ?> r, String prefix, Object perUnit) throws BundleException {
        Object stated = r.get("max_records_per_unit");
        boolean integer = stated instanceof Long || stated instanceof BigInteger;
        if (stated != null && !(integer && big(stated).equals(big(perUnit)))) {
            throw new BundleException("field '" + prefix + "max_records_per_unit' is " + Msgpack.repr(stated)
                    + ", but field 'privacy.max_records_per_unit' is " + perUnit);
        }
        Object statistic = r.get("statistic");
        long perRecord;
        if (CLASS_COUNTS.equals(statistic)) {
            perRecord = 1;
        } else if (CLASS_SUMS.equals(statistic)) {
            Object grid = r.get("grid");
            Object clipField = r.get("clip_l1");
            double clip;
            if (clipField instanceof Long) {
                long c = (Long) clipField;
                clip = Math.abs((double) c) < 0x1p53 ? (double) c : Double.POSITIVE_INFINITY;
            } else if (clipField instanceof BigInteger) {
                clip = Double.POSITIVE_INFINITY;
            } else if (clipField instanceof Double || clipField instanceof Float) {
                clip = ((Number) clipField).doubleValue();
            } else {
                return;
            }
            long statedGrid = statedGrid(grid);
            if (statedGrid == 0) {
                return;
            }
            double product = clip * statedGrid;
            if (!(product > 0 && product < 0x1p53)) {
                return;
            }
            perRecord = (long) Math.rint(product);
        } else {
            return;
        }
        Object sensitivity = r.get("sensitivity_l1");
        if (!big(sensitivity).equals(big(perUnit).multiply(BigInteger.valueOf(perRecord)))) {
            throw new BundleException("field '" + prefix + "sensitivity_l1' is " + sensitivity + ", but a " + statistic
                    + " release with at most " + perUnit + " record(s) per unit has sensitivity " + perUnit + " x "
                    + perRecord + ": the privacy facts contradict each other");
        }
    }

    private static BigInteger big(Object integer) {
        return integer instanceof BigInteger ? (BigInteger) integer : BigInteger.valueOf((Long) integer);
    }

    /**
     * A discrete Laplace release of L1 sensitivity s at epsilon e has noise scale s / e: a
     * bundle whose own facts contradict each other is refused (Python's {@code _check_scale}).
     */
    private static void checkScale(String prefix, Object sensitivity, Object scale, double epsilon)
            throws BundleException {
        double s = Fields.toDouble(sensitivity);
        if (s < 1) {
            throw new BundleException("field '" + prefix + "sensitivity_l1' must be at least 1, got " + sensitivity);
        }
        double sc = Fields.toDouble(scale);
        if (!(sc > 0 && !Double.isInfinite(sc))) {
            throw new BundleException("field '" + prefix + "noise_scale' must be a positive finite number, got "
                    + number(scale));
        }
        double expected = s / epsilon;
        if (!isClose(sc, expected)) {
            throw new BundleException("field '" + prefix + "noise_scale' is " + number(scale) + ", but sensitivity "
                    + sensitivity + " at epsilon " + Msgpack.pyFloat(epsilon) + " needs noise scale "
                    + Msgpack.pyFloat(expected) + ": the privacy facts contradict each other");
        }
    }

    /**
     * The top-level sensitivity and noise scale are one release's (Python's
     * {@code _check_noise_scale}): with releases, the votes release's, or the last release's in a
     * bundle without vote tables (format 3: the class sums'); without releases (format 1.x),
     * those of the whole epsilon.
     */
    static void checkTopLevel(Fields privacy, double eps) throws BundleException {
        Object sensitivity = privacy.m.get("sensitivity_l1");
        Object scale = privacy.m.get("noise_scale");
        Object releases = privacy.m.get("releases");
        if (!(releases instanceof List) || ((List<?>) releases).isEmpty()) {
            checkScale("privacy.", sensitivity, scale, eps);
            return;
        }
        List<?> list = (List<?>) releases;
        Map<?, ?> head = (Map<?, ?>) list.get(list.size() - 1);  // checkReleases found every entry a map
        for (Object r : list) {
            if (VOTES.equals(((Map<?, ?>) r).get("statistic"))) {
                head = (Map<?, ?>) r;
                break;
            }
        }
        if (!sensitivity.equals(head.get("sensitivity_l1"))
                || !isClose(Fields.toDouble(scale), Fields.toDouble(head.get("noise_scale")))) {
            throw new BundleException("fields 'privacy.sensitivity_l1' and 'privacy.noise_scale' (" + sensitivity + ", "
                    + number(scale) + ") must be the " + head.get("statistic") + " release's ("
                    + head.get("sensitivity_l1") + ", " + number(head.get("noise_scale")) + ")");
        }
    }

    /** Python's math.isclose(a, b, rel_tol=PRIVACY_RTOL). */
    static boolean isClose(double a, double b) {
        if (a == b) {
            return true;
        }
        if (Double.isInfinite(a) || Double.isInfinite(b) || Double.isNaN(a) || Double.isNaN(b)) {
            return false;
        }
        return Math.abs(a - b) <= PRIVACY_RTOL * Math.max(Math.abs(a), Math.abs(b));
    }

    /** A number as Python's f-string shows it: an integer as it is, a float as its repr. */
    private static String number(Object v) {
        return v instanceof Double ? Msgpack.pyFloat((Double) v) : String.valueOf(v);
    }
}
