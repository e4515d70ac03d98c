package org.dpedge.core;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.math.BigInteger;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

import org.junit.Test;

/**
 * The container's msgpack rules on raw documents, where the corpus's sealed files cannot reach:
 * every declared length and count is refused before anything is allocated for it.
 */
public class ContainerTest {

    private static Object parse(int... bytes) throws BundleException {
        byte[] d = new byte[bytes.length];
        for (int i = 0; i < d.length; i++) {
            d[i] = (byte) bytes[i];
        }
        return Container.document(d, d.length, 0);
    }

    private static Object parse(byte[] d) throws BundleException {
        return Container.document(d, d.length, 0);
    }

    private static String code(byte[] d) {
        try {
            parse(d);
        } catch (BundleException e) {
            assertEquals("", e.path());
            return e.code();
        }
        fail("accepted");
        return null;
    }

    private static String code(int... bytes) {
        byte[] d = new byte[bytes.length];
        for (int i = 0; i < d.length; i++) {
            d[i] = (byte) bytes[i];
        }
        return code(d);
    }

    /** A map whose single key holds {@code depth - 1} nested one-item arrays around 1. */
    private static byte[] nested(int depth) {
        byte[] out = new byte[depth + 3];
        out[0] = (byte) 0x81;
        out[1] = (byte) 0xa1;
        out[2] = 'k';
        Arrays.fill(out, 3, depth + 2, (byte) 0x91);
        out[depth + 2] = 1;
        return out;
    }

    @Test
    public void declaredLengthsAreCheckedBeforeAnythingIsAllocated() {
        long start = System.nanoTime();
        assertEquals("container.msgpack", code(0x81, 0xa1, 'k', 0xdb, 0x7f, 0xff, 0xff, 0xff, 'a'));  // a 2 GB string
        assertEquals("container.msgpack", code(0x81, 0xa1, 'k', 0xc6, 0x7f, 0xff, 0xff, 0xff, 0));     // a 2 GB bin
        assertEquals("container.count", code(0x81, 0xa1, 'k', 0xdd, 0, 1, 0x86, 0xa1));              // 100,001 items
        assertEquals("container.count", code(0xdf, 0x7f, 0xff, 0xff, 0xff));                          // 2^31 entries
        assertTrue("refused at once", System.nanoTime() - start < 1_000_000_000L);
    }

    @Test
    public void theValueBudgetFollowsTheFileSize() throws Exception {
        // {"k": [0 x n]}: 6 + n bytes, n + 3 values; (6 + n) / 64 + 4096 allowed: 4158 fit, 4159 do not.
        for (int n : new int[] {4158, 4159}) {
            byte[] d = new byte[6 + n];
            d[0] = (byte) 0x81;
            d[1] = (byte) 0xa1;
            d[2] = 'k';
            d[3] = (byte) 0xdc;
            d[4] = (byte) (n >> 8);
            d[5] = (byte) n;
            if (n == 4158) {
                assertEquals(n, ((List<?>) ((Map<?, ?>) parse(d)).get("k")).size());
            } else {
                assertEquals("container.count", code(d));
            }
        }
    }

    @Test
    public void containersNestAtMost32Deep() throws Exception {
        assertTrue(parse(nested(32)) instanceof Map);
        assertEquals("container.depth", code(nested(33)));
        assertEquals("container.depth", code(nested(100_000)));  // refused without recursion
    }

    @Test
    public void keysAreStringsGivenOnce() {
        assertEquals("container.repeated_key", code(0x82, 0xa1, 'k', 1, 0xa1, 'k', 2));
        assertEquals("container.key", code(0x81, 0xc4, 1, 'k', 1));
        assertEquals("container.key", code(0x81, 1, 2));
        assertEquals("container.key", code(0x81, 0xc0, 2));
    }

    @Test
    public void everythingElseThatIsNotStrictMsgpack() {
        assertEquals("container.extension", code(0x81, 0xa1, 'k', 0xd4, 3, 0));
        assertEquals("container.extension", code(0x81, 0xa1, 'k', 0xc7, 0, 5));
        assertEquals("container.msgpack", code(0x81, 0xa1, 'k', 0xc1));
        assertEquals("container.msgpack", code(0x81, 0xa1, 'k', 1, 2));                 // bytes after the map
        assertEquals("container.msgpack", code(0x81, 0xa1, 'k', 0xa3, 0xed, 0xa0, 0x80)); // a surrogate in UTF-8
        assertEquals("container.msgpack", code(0x81, 0xa1, 'k', 0xa2, 0xc0, 0xaf));       // an overlong
        assertEquals("container.msgpack", code(0x81, 0xa1, 'k'));                         // cut short
        assertEquals("container.not_bundle", code(0x91, 1));                              // not a map
    }

    @Test
    public void numbersKeepTheirMsgpackType() throws Exception {
        assertEquals(1.5, ((Map<?, ?>) parse(0x81, 0xa1, 'k', 0xca, 0x3f, 0xc0, 0, 0)).get("k"));
        assertEquals(-2L, ((Map<?, ?>) parse(0x81, 0xa1, 'k', 0xd1, 0xff, 0xfe)).get("k"));
        assertEquals(new BigInteger("18446744073709551615"),
                ((Map<?, ?>) parse(0x81, 0xa1, 'k', 0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)).get("k"));
        Map<?, ?> m = (Map<?, ?>) parse(0x82, 0xa1, 'b', 2, 0xa1, 'a', 1);
        assertEquals(Arrays.asList("b", "a"), Arrays.asList(m.keySet().toArray()));  // file order
    }
}
