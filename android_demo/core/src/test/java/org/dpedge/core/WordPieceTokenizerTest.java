package org.dpedge.core;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import org.junit.Test;

/**
 * The tokenizer on a tiny vocabulary (ids: [CLS]=2, [SEP]=3, [UNK]=1, wake=4, me=5, up=6,
 * play=7, ##ing=8, music=9, !=10, cafe=11, 中=12, un=13, ##believ=14, ##able=15, ##s=16, a=17,
 * ##a=18). The golden test checks the real vocabulary against Python.
 */
public class WordPieceTokenizerTest {
    private static WordPieceTokenizer tok(int maxLength) throws BundleException {
        return new WordPieceTokenizer(TestBundles.TOKENIZER_JSON, maxLength);
    }

    @Test
    public void addsSpecialTokensAndLowercases() throws Exception {
        assertArrayEquals(new int[] {2, 4, 5, 6, 3}, tok(16).encode("Wake ME up"));
        assertArrayEquals(new int[] {2, 3}, tok(16).encode(""));
    }

    @Test
    public void greedyLongestMatchWithContinuationPrefix() throws Exception {
        assertArrayEquals(new int[] {2, 7, 8, 9, 3}, tok(16).encode("playing music"));
        assertArrayEquals(new int[] {2, 13, 14, 15, 3}, tok(16).encode("unbelievable"));
        assertArrayEquals(new int[] {2, 1, 3}, tok(16).encode("unbelievablex"));  // one piece missing: [UNK]
    }

    @Test
    public void splitsPunctuationAndWhitespace() throws Exception {
        assertArrayEquals(new int[] {2, 4, 10, 10, 5, 3}, tok(16).encode("wake!!\t\nme"));
        assertArrayEquals(new int[] {2, 4, 1, 5, 3}, tok(16).encode("wake\u00bfme"));  // ¿ is Po: split off
    }

    @Test
    public void stripsAccentsAndSpacesCjk() throws Exception {
        assertArrayEquals(new int[] {2, 11, 3}, tok(16).encode("Caf\u00e9"));
        assertArrayEquals(new int[] {2, 11, 3}, tok(16).encode("Cafe\u0301"));
        assertArrayEquals(new int[] {2, 4, 12, 5, 3}, tok(16).encode("wake中me"));
    }

    @Test
    public void cleansControlAndFormatCharacters() throws Exception {
        assertArrayEquals(new int[] {2, 4, 5, 3}, tok(16).encode("wa\u0000k\u200be\ufffd me\u0007"));
        assertArrayEquals(new int[] {2, 4, 5, 3}, tok(16).encode("wake\u00a0me"));  // NBSP is whitespace
    }

    @Test
    public void countsCodePointsNotUtf16Units() throws Exception {
        // 100 'a' are one word at the limit (a ##a ##a ...); 101 make it [UNK].
        String hundred = new String(new char[100]).replace('\0', 'a');
        assertEquals(2 + 100, tok(1000).encode(hundred).length);
        assertArrayEquals(new int[] {2, 1, 3}, tok(1000).encode(hundred + "a"));
        // 60 emoji are 120 UTF-16 units but 60 code points: one unknown word, not "too long".
        String emoji = new String(new char[60]).replace("\0", "\uD83D\uDE00");
        assertArrayEquals(new int[] {2, 1, 3}, tok(16).encode(emoji));
        // A supplementary-plane CJK ideograph is spaced like a BMP one.
        assertArrayEquals(new int[] {2, 4, 1, 5, 3}, tok(16).encode("wake\uD840\uDC00me"));
    }

    @Test
    public void recognisesSpecialTokensInTheRawText() throws Exception {
        assertArrayEquals(new int[] {2, 4, 3, 5, 3}, tok(16).encode("wake[SEP]me"));
        assertArrayEquals(new int[] {2, 1, 3}, tok(16).encode("[UNK]"));
        // Matching is on the raw text, before lowercasing: "[sep]" is "[", "sep", "]".
        assertArrayEquals(new int[] {2, 1, 1, 1, 4, 3}, tok(16).encode("[sep]wake"));
    }

    @Test
    public void truncatesToMaxLengthIncludingSpecialTokens() throws Exception {
        assertArrayEquals(new int[] {2, 4, 5, 3}, tok(4).encode("wake me up play music"));
        assertArrayEquals(new int[] {2, 3}, tok(2).encode("wake me up"));
        assertArrayEquals(new int[] {2, 7, 3}, tok(3).encode("playing"));  // cut inside a word's pieces
    }

    @Test
    public void refusesTokenizersItCannotReproduce() {
        String[] bad = {
            "not json",
            TestBundles.TOKENIZER_JSON.replace("\"WordPiece\",\"unk_token\"", "\"BPE\",\"unk_token\""),
            TestBundles.TOKENIZER_JSON.replace("BertPreTokenizer", "Whitespace"),
            TestBundles.TOKENIZER_JSON.replace("\"BertNormalizer\"", "\"NFKC\""),
            TestBundles.TOKENIZER_JSON.replace("\"type\":\"TemplateProcessing\"", "\"type\":\"RobertaProcessing\""),
            TestBundles.TOKENIZER_JSON.replace("\"unk_token\":\"[UNK]\"", "\"unk_token\":\"<unk>\""),
            TestBundles.TOKENIZER_JSON.replaceFirst("\"lstrip\":false", "\"lstrip\":true"),
        };
        for (String json : bad) {
            try {
                new WordPieceTokenizer(json, 16);
                fail("accepted " + json.substring(0, Math.min(80, json.length())));
            } catch (BundleException expected) {
                assertTrue(expected.getMessage().startsWith("the bundle's tokenizer cannot be loaded: "));
            }
        }
    }

    @Test
    public void characterClassesFollowTheRustLibrary() {
        assertTrue(WordPieceTokenizer.isChineseChar(0x4E2D));
        assertTrue(WordPieceTokenizer.isChineseChar(0x2B920));
        assertFalse(WordPieceTokenizer.isChineseChar(0x2B820));  // the Rust range starts at U+2B920
        assertTrue(WordPieceTokenizer.isControl(0x200B));
        assertFalse(WordPieceTokenizer.isControl('\t'));
        assertFalse(WordPieceTokenizer.isControl(0x0378));  // unassigned: kept
        assertFalse(WordPieceTokenizer.isControl(0x0890));  // Cf since Unicode 14, unknown to the Rust tables
        assertTrue(WordPieceTokenizer.isPunctuation('$'));
        assertTrue(WordPieceTokenizer.isPunctuation(0x166D));
        assertFalse(WordPieceTokenizer.isPunctuation(0x2E43));
        assertTrue(WordPieceTokenizer.isWhitespace(0x3000));
        assertFalse(WordPieceTokenizer.isWhitespace(0x200B));
    }
}
