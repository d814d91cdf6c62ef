/* Tokenizer: SPM byte fallback, invalid UTF-8, special-token parsing, BOS
 * rules, split UTF-8 decoding, end-of-generation sets and ids checked
 * against llama.cpp's test-tokenizer-0 outputs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "gguf/gguf.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/unicode.h"
#include "testutil.h"

static tokenizer *load(const char *rel)
{
    const char *path = TESTDATA_REQUIRE(rel);
    char err[512];
    gguf_ctx *g = gguf_open(path, err, sizeof err);
    if (!g)
        fail_msg("%s", err);
    tokenizer *t = tokenizer_build(g, err, sizeof err);
    gguf_close(g);
    if (!t)
        fail_msg("%s", err);
    return t;
}

#define SPM "golden/tokenizer/ggml-vocab-llama-spm.gguf"
#define SMOL "models/smollm-mini-q8_0.gguf"
#define GPT2 "golden/tokenizer/ggml-vocab-gpt-2.gguf"
#define PHI3 "golden/tokenizer/ggml-vocab-phi-3.gguf"

/* encodes s and compares with the expected ids */
static void expect_ids(const tokenizer *t, const char *s, bool bos, bool special, const int32_t *exp, int n_exp)
{
    int32_t ids[256];
    int32_t n = tokenizer_encode(t, s, strlen(s), bos, special, ids, 256);
    if (n != n_exp) {
        char got[1024] = "";
        for (int i = 0; i < n && i < 64; i++)
            snprintf(got + strlen(got), sizeof got - strlen(got), " %d", ids[i]);
        fail_msg("'%s': %d tokens (%s), expected %d", s, n, got, n_exp);
    }
    for (int i = 0; i < n; i++)
        if (ids[i] != exp[i])
            fail_msg("'%s': token %d is %d, expected %d", s, i, ids[i], exp[i]);
}
#define EXPECT(t, s, bos, sp, ...)                                                                                 \
    do {                                                                                                           \
        static const int32_t e_[] = {__VA_ARGS__};                                                                 \
        expect_ids(t, s, bos, sp, e_, (int)(sizeof e_ / sizeof e_[0]));                                            \
    } while (0)

/* same with ids known only at run time */
#define EXPECTV(t, s, bos, sp, ...)                                                                          \
    do {                                                                                                     \
        const int32_t e_[] = {__VA_ARGS__};                                                                  \
        expect_ids(t, s, bos, sp, e_, (int)(sizeof e_ / sizeof e_[0]));                                      \
    } while (0)

static void test_golden_ids(void **state)
{
    (void)state;
    tokenizer *spm = load(SPM), *gpt2 = load(GPT2), *smol = load(SMOL);
    /* lines of the .out files of llama.cpp b10470 */
    EXPECT(spm, "ied 4 \xc2\xbd months", false, false, 474, 287, 29871, 29946, 29871, 30226, 7378);
    EXPECT(spm, " Hello world", false, false, 29871, 15043, 3186);
    EXPECT(spm, "\t\n", false, false, 29871, 12, 13);
    EXPECT(gpt2, "Hello world", false, false, 15496, 995);
    EXPECT(gpt2, " Hello world", false, false, 18435, 995);
    EXPECT(gpt2, "\n\n\n", false, false, 628, 198);
    EXPECT(smol, "ied 4 \xc2\xbd months", false, false, 885, 216, 36, 216, 16738, 2704);
    EXPECT(smol, "\xc3\x84pfel", false, false, 142, 222, 96, 34520);
    EXPECT(smol, "w048 7tuijk dsdfhu", false, false, 103, 32, 36, 40, 216, 39, 24961, 47112, 21554, 3492, 15995);
    tokenizer_free(spm);
    tokenizer_free(gpt2);
    tokenizer_free(smol);
}

static void test_spm_byte_fallback(void **state)
{
    (void)state;
    tokenizer *t = load(SPM);
    /* the llama is not in the vocab: space token then its four UTF-8 bytes */
    EXPECT(t, "\xf0\x9f\xa6\x99", false, false, 29871, 243, 162, 169, 156);
    assert_int_equal(tokenizer_token_type(t, 243), TOKEN_TYPE_BYTE);
    size_t l;
    assert_string_equal(tokenizer_token_str(t, 243, &l), "<0xF0>");
    char buf[8];
    assert_int_equal(tokenizer_token_to_piece(t, 243, false, buf, sizeof buf), 1);
    assert_int_equal((uint8_t)buf[0], 0xF0);
    tokenizer_free(t);
}

static void test_invalid_utf8(void **state)
{
    (void)state;
    static const char *const inputs[] = {"\xff", "\x80\x80", "abc\xc3", "\xe2\x96", "\xf7\xbf\xbf\xbf",
                                         "\xed\xa0\x80x", "a\xc0\xaf b", "<|im_start|\xff>", "\xf0\x9f\xa6"};
    const char *vocabs[] = {SPM, SMOL, GPT2, "golden/tokenizer/ggml-vocab-deepseek-llm.gguf",
                            "golden/tokenizer/ggml-vocab-falcon.gguf"};
    for (size_t v = 0; v < sizeof vocabs / sizeof vocabs[0]; v++) {
        tokenizer *t = load(vocabs[v]);
        int32_t ids[128];
        char dec[512];
        for (size_t i = 0; i < sizeof inputs / sizeof inputs[0]; i++) {
            for (int sp = 0; sp < 2; sp++) {
                int32_t n = tokenizer_encode(t, inputs[i], strlen(inputs[i]), true, sp, ids, 128);
                assert_true(n >= 0);
                for (int32_t k = 0; k < n; k++)
                    assert_true(ids[k] >= 0 && ids[k] < tokenizer_n_vocab(t));
                int32_t d = tokenizer_decode(t, ids, n, true, false, dec, sizeof dec);
                assert_true(d >= 0);
                /* SPM keeps every byte through byte fallback */
                if (tokenizer_kind(t) == TOKENIZER_SPM) {
                    int32_t skip = tokenizer_add_bos(t) ? 1 : 0;
                    d = tokenizer_decode(t, ids + skip, n - skip, true, false, dec, sizeof dec);
                    assert_int_equal(d, (int32_t)strlen(inputs[i]));
                    assert_memory_equal(dec, inputs[i], (size_t)d);
                }
            }
        }
        /* random bytes: no crash, ids in range (the reference re-splits invalid
         * sequences, so these need not round-trip) */
        uint32_t seed = 12345;
        for (int r = 0; r < 300; r++) {
            char s[64];
            int len = 1 + r % 60;
            for (int j = 0; j < len; j++) {
                seed = seed * 1103515245u + 12345u;
                s[j] = (char)(seed >> 16);
            }
            int32_t n = tokenizer_encode(t, s, (size_t)len, false, r & 1, ids, 128);
            assert_true(n >= 0 && n <= 128);
            for (int32_t k = 0; k < n; k++)
                assert_true(ids[k] >= 0 && ids[k] < tokenizer_n_vocab(t));
        }
        /* random valid UTF-8 (ASCII, Latin, Cyrillic, CJK, emoji, spaces) round-trips; no \v or \f:
         * falcon has no byte token for them and drops them, as the reference does */
        static const uint32_t ranges[][2] = {{0x20, 0x7E}, {0x09, 0x0A}, {0xA0, 0x17F}, {0x400, 0x4FF},
                                             {0x4E00, 0x4FFF}, {0x1F300, 0x1F6FF}, {0x2000, 0x206F}};
        for (int r = 0; r < 300; r++) {
            char s[128];
            size_t len = 0;
            int nc = 1 + r % 20;
            for (int j = 0; j < nc; j++) {
                seed = seed * 1103515245u + 12345u;
                const uint32_t *rg = ranges[(seed >> 8) % 7];
                seed = seed * 1103515245u + 12345u;
                uint32_t cp = rg[0] + (seed >> 8) % (rg[1] - rg[0] + 1);
                if (cp < 0x80)
                    s[len++] = (char)cp;
                else if (cp < 0x800) {
                    s[len++] = (char)(0xC0 | (cp >> 6));
                    s[len++] = (char)(0x80 | (cp & 0x3F));
                } else if (cp < 0x10000) {
                    s[len++] = (char)(0xE0 | (cp >> 12));
                    s[len++] = (char)(0x80 | ((cp >> 6) & 0x3F));
                    s[len++] = (char)(0x80 | (cp & 0x3F));
                } else {
                    s[len++] = (char)(0xF0 | (cp >> 18));
                    s[len++] = (char)(0x80 | ((cp >> 12) & 0x3F));
                    s[len++] = (char)(0x80 | ((cp >> 6) & 0x3F));
                    s[len++] = (char)(0x80 | (cp & 0x3F));
                }
            }
            int32_t n = tokenizer_encode(t, s, len, false, false, ids, 128);
            assert_true(n >= 0 && n <= 128);
            int32_t d = tokenizer_decode(t, ids, n, true, true, dec, sizeof dec);
            if ((size_t)d != len || memcmp(dec, s, len) != 0)
                fail_msg("%s: round-trip of random text %d failed (%d vs %zu bytes)", vocabs[v], r, d, len);
        }
        tokenizer_free(t);
    }
}

static void test_special_parsing(void **state)
{
    (void)state;
    tokenizer *t = load(SMOL);
    int32_t im_start = tokenizer_find(t, "<|im_start|>");
    assert_int_equal(im_start, 1);
    EXPECT(t, "<|im_start|>user", false, true, 1, 4093);
    int32_t ids[64];
    int32_t n = tokenizer_encode(t, "<|im_start|>user", 16, false, false, ids, 64);
    assert_true(n > 2);
    for (int32_t i = 0; i < n; i++)
        assert_int_not_equal(ids[i], im_start);
    /* control tokens render only on request */
    char buf[32];
    assert_int_equal(tokenizer_token_to_piece(t, im_start, false, buf, sizeof buf), 0);
    assert_int_equal(tokenizer_token_to_piece(t, im_start, true, buf, sizeof buf), 12);
    assert_memory_equal(buf, "<|im_start|>", 12);
    tokenizer_free(t);

    /* SPM: a special token resets the space prefix */
    t = load(SPM);
    EXPECT(t, "<s>Hello", false, true, 1, 15043);
    EXPECT(t, "Hi<s>Hello", false, true, 6324, 1, 15043);
    tokenizer_free(t);

    /* phi-3: special tokens strip the whitespace to their right (llama.cpp's name-based rule) */
    t = load(PHI3);
    int32_t a[32], b[32];
    int32_t na = tokenizer_encode(t, "<|user|>\nHi<|end|>", 18, false, true, a, 32);
    int32_t nb = tokenizer_encode(t, "<|user|>Hi<|end|>", 17, false, true, b, 32);
    assert_int_equal(na, nb);
    assert_memory_equal(a, b, sizeof a[0] * (size_t)na);
    assert_int_equal(a[0], tokenizer_find(t, "<|user|>"));
    tokenizer_free(t);
}

static void test_bos_rules(void **state)
{
    (void)state;
    tokenizer *spm = load(SPM), *smol = load(SMOL), *gpt2 = load(GPT2);
    assert_true(tokenizer_add_bos(spm));
    assert_int_equal(tokenizer_bos(spm), 1);
    EXPECT(spm, "Hello world", true, false, 1, 15043, 3186);
    EXPECT(spm, "", true, false, 1);
    assert_int_equal(tokenizer_encode(spm, "", 0, false, false, NULL, 0), 0);
    EXPECT(spm, "Hello world", false, false, 15043, 3186);
    tokenizer_free(spm);
    /* SmolLM has a BOS id but does not add it */
    assert_false(tokenizer_add_bos(smol));
    assert_int_equal(tokenizer_bos(smol), 1);
    assert_false(tokenizer_add_bos(gpt2));
    assert_int_equal(tokenizer_kind(smol), TOKENIZER_BPE);
    assert_string_equal(tokenizer_pre(smol), "smollm");
    tokenizer_free(smol);
    tokenizer_free(gpt2);
}

static void test_encode_buffer(void **state)
{
    (void)state;
    tokenizer *t = load(GPT2);
    int32_t ids[2] = {-7, -7};
    int32_t n = tokenizer_encode(t, "Hello world, how are you", 24, false, false, ids, 1);
    assert_true(n > 1);
    assert_int_equal(ids[0], 15496);
    assert_int_equal(ids[1], -7);
    assert_int_equal(tokenizer_encode(t, "", 0, false, false, NULL, 0), 0);
    tokenizer_free(t);
}

static void test_utf8_split_decode(void **state)
{
    (void)state;
    assert_int_equal(tokenizer_utf8_complete("a\xf0\x9f", 3), 1);
    assert_int_equal(tokenizer_utf8_complete("a\xf0\x9f\xa6\x99", 5), 5);
    assert_int_equal(tokenizer_utf8_complete("\xc3", 1), 0);
    assert_int_equal(tokenizer_utf8_complete("\xc3\xa4", 2), 2);
    assert_int_equal(tokenizer_utf8_complete("ab", 2), 2);
    assert_int_equal(tokenizer_utf8_complete("\x80", 1), 1); /* stray continuation: nothing to wait for */
    assert_int_equal(tokenizer_utf8_complete("", 0), 0);

    /* streaming the llama emoji through byte tokens */
    tokenizer *t = load(SPM);
    static const int32_t ids[] = {29871, 243, 162, 169, 156, 29889};
    char acc[64];
    size_t len = 0, printed = 0;
    size_t complete_at[6];
    for (int i = 0; i < 6; i++) {
        int32_t l = tokenizer_token_to_piece(t, ids[i], false, acc + len, (int32_t)(sizeof acc - len));
        len += (size_t)l;
        printed = tokenizer_utf8_complete(acc, len);
        complete_at[i] = printed;
    }
    assert_int_equal(complete_at[0], 1); /* " " */
    assert_int_equal(complete_at[1], 1);
    assert_int_equal(complete_at[3], 1);
    assert_int_equal(complete_at[4], 5);
    assert_int_equal(complete_at[5], 6);
    assert_memory_equal(acc, " \xf0\x9f\xa6\x99.", 6);
    char dec[32];
    assert_int_equal(tokenizer_decode(t, ids, 6, true, false, dec, sizeof dec), 5);
    assert_string_equal(dec, "\xf0\x9f\xa6\x99.");
    /* truncation keeps the needed size and NUL-terminates */
    assert_int_equal(tokenizer_decode(t, ids, 6, true, false, dec, 3), 5);
    assert_int_equal(strlen(dec), 2);
    tokenizer_free(t);
}

static void test_eog(void **state)
{
    (void)state;
    tokenizer *t = load(SMOL);
    assert_int_equal(tokenizer_eos(t), 2);
    assert_true(tokenizer_is_eog(t, 2));                                  /* <|im_end|> */
    assert_true(tokenizer_is_eog(t, tokenizer_find(t, "<|endoftext|>"))); /* 0 */
    assert_false(tokenizer_is_eog(t, 1));                                 /* <|im_start|> */
    assert_false(tokenizer_is_eog(t, 4093));
    assert_false(tokenizer_is_eog(t, -1));
    assert_false(tokenizer_is_eog(t, 1 << 30));
    int n = 0;
    for (int32_t i = 0; i < tokenizer_n_vocab(t); i++)
        n += tokenizer_is_eog(t, i);
    assert_int_equal(n, 3); /* <reponame> is FIM repo, which the reference counts as EOG */
    assert_true(tokenizer_is_eog(t, tokenizer_find(t, "<reponame>")));
    tokenizer_free(t);

    t = load(SPM);
    assert_true(tokenizer_is_eog(t, 2));
    assert_false(tokenizer_is_eog(t, 1));
    assert_int_equal(tokenizer_eot(t), -1);
    tokenizer_free(t);

    t = load(PHI3);
    assert_true(tokenizer_is_eog(t, tokenizer_find(t, "<|endoftext|>")));
    assert_true(tokenizer_is_eog(t, tokenizer_find(t, "<|end|>")));
    assert_true(tokenizer_is_eog(t, tokenizer_find(t, "</s>")));
    assert_false(tokenizer_is_eog(t, tokenizer_find(t, "<|assistant|>")));
    assert_int_equal(tokenizer_eos(t), 32000);
    assert_true(tokenizer_eot(t) == tokenizer_find(t, "<|end|>") || tokenizer_eot(t) == 32000);
    tokenizer_free(t);
}

/* Pre-tokenizer words of text as raw bytes joined by '|' (byte-level decoded). */
static void split_words(const tokenizer *t, const char *text, char *out, size_t cap)
{
    tok_words w = {0};
    assert_true(tok_pretok_split(t, text, strlen(text), &w));
    size_t o = 0;
    out[0] = 0;
    for (size_t i = 0; i < w.n; i++) {
        const char *s = w.buf + w.off[i];
        size_t len = w.off[i + 1] - w.off[i], off = 0;
        while (off < len) {
            int b = unicode_cpt_to_byte(unicode_decode(s, len, &off));
            assert_true(b >= 0);
            if (o + 2 < cap)
                out[o++] = (char)b;
        }
        if (o + 2 < cap)
            out[o++] = '|';
    }
    out[o] = 0;
    tok_words_free(&w);
}

static void expect_split(const char *pre, const char *text, const char *exp)
{
    tokenizer t;
    memset(&t, 0, sizeof t);
    snprintf(t.pre, sizeof t.pre, "%s", pre);
    char err[256], got[1024];
    if (!tok_pretok_init(&t, err, sizeof err))
        fail_msg("%s: %s", pre, err);
    split_words(&t, text, got, sizeof got);
    tok_pretok_free(&t);
    if (strcmp(got, exp))
        fail_msg("%s split of '%s':\n got      %s\n expected %s", pre, text, got, exp);
}

static void test_pretokenizer_presets(void **state)
{
    (void)state;
    /* worked out by hand from the reference's expression lists */
    expect_split("qwen2", "Hello world 123!!\n\nok", "Hello| world| |1|2|3|!!\n\n|ok|");
    expect_split("llama3", "3333 I'm  x\n\n y", "333|3| I|'m| | x|\n\n| y|");
    expect_split("llama-bpe", "I'M 'RE", "I|'M| '|RE|");
    expect_split("gpt-2", "I'M  x 12ab", "I|'|M| | x| 12|ab|");
    expect_split("deepseek-coder", "Hi 12, \xe4\xbd\xa0\xe5\xa5\xbd!", "Hi| |1|2|,| |\xe4\xbd\xa0\xe5\xa5\xbd|!|");
    expect_split("starcoder", "x 2024 y", "x| |2|0|2|4| y|");
    expect_split("falcon", "1234567 a,b", "123|456|7| a|,|b|");
    /* non-ASCII whitespace (EM SPACE) is \s for the split, letters outside ASCII are \p{L} */
    expect_split("qwen2", "a\xe2\x80\x83\xc3\xa4", "a|\xe2\x80\x83\xc3\xa4|");
    expect_split("gpt-2", "a\xe2\x80\x83\xe2\x80\x83" "b", "a|\xe2\x80\x83|\xe2\x80\x83|b|");
    expect_split("gpt-2", "a  b  ", "a| | b|  |");
    /* gemma4: runs of newlines and of everything else, nothing more */
    expect_split("gemma4", "a b, c!\n\n d\t\n", "a b, c!|\n\n| d\t|\n|");
    expect_split("granite-embed-multi-311m", "\nx y", "\n|x y|");
    /* every supported preset compiles and splits hostile text */
    static const char *const names[] = {
        "default", "llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2",
        "dbrx", "smaug-bpe", "glm4", "chatglm-bpe", "deepseek-llm", "deepseek-coder", "deepseek-v3",
        "hunyuan-dense", "joyai-llm", "hy_v4", "falcon", "starcoder", "refact", "command-r", "smollm",
        "codeshell", "exaone", "minerva-7b", "mellum2", "gpt-2", "phi-2", "jina-es", "mpt", "olmo", "jais",
        "trillion", "granite-docling", "exaone4", "roberta-bpe", "qwen2", "deepseek-r1-qwen", "megrez",
        "stablelm2", "hunyuan", "solar-open", "grok-2", "poro-chat", "bloom", "gpt3-finnish", "viking",
        "seed-coder", "tekken", "gpt-4o", "llama4", "minimax-m2", "chameleon", "qwen35", "jais-2", "spark2_5",
        "bailingmoe", "llada-moe", "ufakzeka", "laguna", "exaone-moe", "minicpm5", "gemma4",
        "granite-embed-multi-311m"};
    static const char hostile[] = "a\xff\xfe 12 \xe2\x80\x83\n\r\n\t<|x|> \xf0\x9f\x98\x81\xcc\x81 'S 3333333 $%^";
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        tokenizer p;
        memset(&p, 0, sizeof p);
        snprintf(p.pre, sizeof p.pre, "%s", names[i]);
        char e[256];
        if (!tok_pretok_init(&p, e, sizeof e))
            fail_msg("preset %s: %s", names[i], e);
        tok_words w = {0};
        assert_true(tok_pretok_split(&p, hostile, sizeof hostile - 1, &w));
        assert_true(w.n > 3);
        tok_words_free(&w);
        tok_pretok_free(&p);
    }

    tokenizer t;
    memset(&t, 0, sizeof t);
    snprintf(t.pre, sizeof t.pre, "no-such-pre");
    char err[256];
    assert_false(tok_pretok_init(&t, err, sizeof err));
    assert_non_null(strstr(err, "no-such-pre"));
}

/* The hand-written gpt2/llama3 splitters and the generic PCRE2 path over the
 * collapsed text are independent implementations of the same expression. */
static void test_pretokenizer_custom_vs_regex(void **state)
{
    (void)state;
    static const char *const alpha[] = {"a", "B", " ", "  ", "\n", "\r", "\t", "'", "s", "'S", "'ll", "1", "22",
                                        "333", "!", "?!", "\xc3\xa4", "\xe4\xbd\xa0", "\xf0\x9f\x98\x81",
                                        "\xe2\x80\x83", "\xc2\xa0", "\xcc\x81", "$", "\xe2\x82\xac", "\xd9\xa3",
                                        "\xe2\x85\xa0", "\xff"};
    const char *res[2] = {TOK_RE_GPT2_STR, TOK_RE_LLAMA3_STR};
    for (int k = 0; k < 2; k++) {
        tokenizer a, b;
        memset(&a, 0, sizeof a);
        memset(&b, 0, sizeof b);
        char err[256];
        assert_true(tok_regex_compile(&a.regex[0], res[k], false, err, sizeof err));
        assert_true(tok_regex_compile(&b.regex[0], res[k], true, err, sizeof err));
        assert_true(a.regex[0].kind == (k ? TOK_RE_LLAMA3 : TOK_RE_GPT2));
        assert_int_equal(b.regex[0].kind, TOK_RE_COLLAPSED);
        a.n_regex = b.n_regex = 1;
        uint32_t seed = 7;
        for (int r = 0; r < 20000; r++) {
            char s[256] = "";
            int n = 1 + r % 12;
            for (int j = 0; j < n; j++) {
                seed = seed * 1103515245u + 12345u;
                strcat(s, alpha[(seed >> 16) % (sizeof alpha / sizeof alpha[0])]);
            }
            char w1[2048], w2[2048];
            split_words(&a, s, w1, sizeof w1);
            split_words(&b, s, w2, sizeof w2);
            if (strcmp(w1, w2))
                fail_msg("expression %d on '%s': custom %s, regex %s", k, s, w1, w2);
        }
        tok_pretok_free(&a);
        tok_pretok_free(&b);
    }
}

static void test_unicode_table(void **state)
{
    (void)state;
    assert_int_equal(unicode_cat(unicode_flags('a')), UNICODE_CAT_LETTER);
    assert_int_equal(unicode_cat(unicode_flags('7')), UNICODE_CAT_NUMBER);
    assert_int_equal(unicode_cat(unicode_flags('$')), UNICODE_CAT_SYMBOL);
    assert_int_equal(unicode_cat(unicode_flags('_')), UNICODE_CAT_PUNCT);
    assert_int_equal(unicode_cat(unicode_flags(0x0301)), UNICODE_CAT_MARK);
    assert_int_equal(unicode_cat(unicode_flags(0x31350)), UNICODE_CAT_LETTER); /* CJK ext H, Unicode 15.0 */
    assert_int_equal(unicode_cat(unicode_flags(0x2EBF0)), UNICODE_CAT_LETTER); /* CJK ext I, Unicode 15.1 */
    assert_int_equal(unicode_cat(unicode_flags(0x2FFC)), UNICODE_CAT_SYMBOL);  /* 15.1 */
    assert_int_equal(unicode_cat(unicode_flags(0x1FBCB)), UNICODE_CAT_CONTROL); /* unassigned in 15.1 */
    assert_int_equal(unicode_cat(unicode_flags(0xE000)), UNICODE_CAT_CONTROL);  /* private use */
    /* White_Space, not Python's isspace: U+001C is not whitespace, U+0085 is */
    assert_true(unicode_is_ws(unicode_flags(0x85)));
    assert_true(unicode_is_ws(unicode_flags(0x3000)));
    assert_false(unicode_is_ws(unicode_flags(0x1C)));
    assert_false(unicode_is_ws(unicode_flags(0x200B)));
    assert_int_equal(unicode_flags(0x110000), 0);
    /* the reference's lenient decoder */
    size_t off = 0;
    assert_int_equal(unicode_decode("\xed\xa0\x80", 3, &off), 0xD800);
    assert_int_equal(off, 3);
    off = 0;
    assert_int_equal(unicode_decode("\xe2\x96", 2, &off), 0xFFFD);
    assert_int_equal(off, 1);
    int l;
    assert_string_equal(unicode_byte_to_utf8(' ', &l), "\xc4\xa0"); /* GPT-2's "G with dot" */
    assert_int_equal(unicode_cpt_to_byte(0x120), ' ');
    assert_int_equal(unicode_cpt_to_byte('A'), 'A');
    assert_int_equal(unicode_cpt_to_byte(0x4E00), -1);
}

static void test_detokenize_llama(void **state)
{
    (void)state;
    tokenizer *t = load(GPT2);
    const char *s = "Hello , world 's ok ?";
    int32_t ids[64];
    int32_t n = tokenizer_encode(t, s, strlen(s), false, false, ids, 64);
    char buf[128];
    /* plain concatenation round-trips */
    assert_int_equal(tokenizer_decode(t, ids, n, true, true, buf, sizeof buf), (int32_t)strlen(s));
    assert_string_equal(buf, s);
    /* llama_detokenize applies gpt-2's clean_up_tokenization_spaces */
    int32_t k = tokenizer_detokenize(t, ids, n, false, false, buf, sizeof buf);
    assert_string_equal(buf, "Hello, world's ok?");
    assert_int_equal(k, 18);
    tokenizer_free(t);

    t = load(SPM);
    n = tokenizer_encode(t, "Hello", 5, true, false, ids, 64);
    assert_int_equal(n, 2);
    /* remove_special drops BOS and then keeps the space; without it BOS renders nothing
     * but still takes the leading-space removal */
    tokenizer_detokenize(t, ids, n, true, false, buf, sizeof buf);
    assert_string_equal(buf, " Hello");
    tokenizer_detokenize(t, ids, n, false, true, buf, sizeof buf);
    assert_string_equal(buf, "<s> Hello");
    tokenizer_detokenize(t, ids + 1, 1, false, false, buf, sizeof buf);
    assert_string_equal(buf, "Hello");
    tokenizer_free(t);
}

static void test_bad_vocab(void **state)
{
    (void)state;
    /* a GGUF without tokenizer keys: clean error, no crash */
    const char *path = TESTDATA_REQUIRE("golden/tokenizer/ggml-vocab-gpt-2.gguf");
    (void)path;
    static const unsigned char hdr[] = {'G', 'G', 'U', 'F', 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    char err[256];
    gguf_ctx *g = gguf_open_buffer(hdr, sizeof hdr, "empty", err, sizeof err);
    assert_non_null(g);
    tokenizer *t = tokenizer_build(g, err, sizeof err);
    assert_null(t);
    assert_non_null(strstr(err, "tokenizer"));
    gguf_close(g);
}

/* ---- Gemma 4: tokenizer.ggml.model = gemma4 (BPE over SentencePiece-style text) ---- */

#define GEMMA4 "families2026/golden/tokenizer/ggml-vocab-gemma-4.gguf"

/* A GGUF v3 in memory, vocab keys only, to check gemma4's rules on a vocab
 * small enough to work every expected id out by hand. */
typedef struct gbuf {
    unsigned char *p;
    size_t n, cap;
} gbuf;

static void gb_put(gbuf *b, const void *x, size_t n)
{
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 256;
        b->p = realloc(b->p, b->cap);
        assert_non_null(b->p);
    }
    memcpy(b->p + b->n, x, n);
    b->n += n;
}
static void gb_u32(gbuf *b, uint32_t v) { gb_put(b, &v, 4); }
static void gb_u64(gbuf *b, uint64_t v) { gb_put(b, &v, 8); }
static void gb_str(gbuf *b, const char *s)
{
    gb_u64(b, strlen(s));
    gb_put(b, s, strlen(s));
}
enum { GV_U32 = 4, GV_I32 = 5, GV_BOOL = 7, GV_STR = 8, GV_ARR = 9 };
static void gb_kv_str(gbuf *b, const char *k, const char *v)
{
    gb_str(b, k);
    gb_u32(b, GV_STR);
    gb_str(b, v);
}
static void gb_kv_u32(gbuf *b, const char *k, uint32_t v)
{
    gb_str(b, k);
    gb_u32(b, GV_U32);
    gb_u32(b, v);
}
static void gb_kv_bool(gbuf *b, const char *k, bool v)
{
    gb_str(b, k);
    gb_u32(b, GV_BOOL);
    unsigned char c = v;
    gb_put(b, &c, 1);
}
static void gb_kv_strs(gbuf *b, const char *k, const char *const *v, int n)
{
    gb_str(b, k);
    gb_u32(b, GV_ARR);
    gb_u32(b, GV_STR);
    gb_u64(b, (uint64_t)n);
    for (int i = 0; i < n; i++)
        gb_str(b, v[i]);
}
static void gb_kv_i32s(gbuf *b, const char *k, const int32_t *v, int n)
{
    gb_str(b, k);
    gb_u32(b, GV_ARR);
    gb_u32(b, GV_I32);
    gb_u64(b, (uint64_t)n);
    for (int i = 0; i < n; i++)
        gb_put(b, &v[i], 4);
}

/* ids of the small vocab below */
enum { G_PAD, G_EOS, G_BOS, G_UNK, G_TURN, G_TURN_END, G_QUOTE, G_SP, G_A, G_B, G_SP_A, G_AB, G_SP_AB,
       G_NL, G_NL2, G_NL3, G_SP2, G_XC3, G_XA4, G_XEF, G_RAW_BF, G_COMMA, G_APOS, G_S, G_NTOK };

/* with_ids: bos/eos keys (2 and 1) and add_bos_token = false, which gemma4 overrides */
static tokenizer *small_gemma4(bool with_ids)
{
    static const char *const tok[G_NTOK] = {
        "<pad>", "<eos>", "<bos>", "<unk>", "<|turn>", "<turn|>", "<|\"|>", "\xe2\x96\x81", "a", "b",
        "\xe2\x96\x81" "a", "ab", "\xe2\x96\x81" "ab", "\n", "\n\n", "\n\n\n", "\xe2\x96\x81\xe2\x96\x81",
        "<0xC3>", "<0xA4>", "<0xEF>", "\xbf", ",", "'", "s"};
    int32_t ty[G_NTOK];
    for (int i = 0; i < G_NTOK; i++)
        ty[i] = i <= G_TURN_END ? TOKEN_TYPE_CONTROL : TOKEN_TYPE_NORMAL;
    ty[G_QUOTE] = TOKEN_TYPE_USER_DEFINED;
    ty[G_XC3] = ty[G_XA4] = ty[G_XEF] = TOKEN_TYPE_BYTE;
    /* no merge builds "\n\n\n": only the whole-newline-word rule gives it */
    static const char *const merges[] = {"\xe2\x96\x81 a", "a b", "\xe2\x96\x81" "a b", "\n \n",
                                         "\xe2\x96\x81 \xe2\x96\x81"};
    gbuf b = {0};
    gb_put(&b, "GGUF", 4);
    gb_u32(&b, 3);
    gb_u64(&b, 0);
    gb_u64(&b, with_ids ? 8 : 5);
    gb_kv_str(&b, "tokenizer.ggml.model", "gemma4");
    gb_kv_str(&b, "tokenizer.ggml.pre", "llama3"); /* ignored: gemma4 implies its own */
    gb_kv_strs(&b, "tokenizer.ggml.tokens", tok, G_NTOK);
    gb_kv_i32s(&b, "tokenizer.ggml.token_type", ty, G_NTOK);
    gb_kv_strs(&b, "tokenizer.ggml.merges", merges, 5);
    if (with_ids) {
        gb_kv_u32(&b, "tokenizer.ggml.bos_token_id", G_BOS);
        gb_kv_u32(&b, "tokenizer.ggml.eos_token_id", G_EOS);
        gb_kv_bool(&b, "tokenizer.ggml.add_bos_token", false);
    }
    char err[256];
    gguf_ctx *g = gguf_open_buffer(b.p, b.n, "small-gemma4", err, sizeof err);
    if (!g)
        fail_msg("%s", err);
    tokenizer *t = tokenizer_build(g, err, sizeof err);
    gguf_close(g);
    free(b.p);
    if (!t)
        fail_msg("%s", err);
    return t;
}

/* Every id below follows from llama.cpp's rules for the GEMMA4 pre-type
 * (llama-vocab.cpp at 34af94cd): spaces -> U+2581, words = runs of newlines
 * and of other characters, lowest merge rank first (ties: leftmost), a
 * newline-only word that is a token stays whole, <0xXX>-only byte fallback. */
static void test_gemma4_small_rules(void **state)
{
    (void)state;
    tokenizer *t = small_gemma4(true);
    assert_int_equal(tokenizer_kind(t), TOKENIZER_BPE);
    assert_string_equal(tokenizer_pre(t), "gemma4");
    EXPECT(t, "ab", false, false, G_AB);
    EXPECT(t, " ab", false, false, G_SP_AB);            /* "▁ a" (rank 0), then "▁a b" */
    EXPECT(t, "a b", false, false, G_A, G_SP, G_B);     /* no space prefix, no merge with ▁ on the left */
    EXPECT(t, "  a", false, false, G_SP, G_SP_A);       /* "▁ a" (rank 0) before "▁ ▁" (rank 4) */
    EXPECT(t, "   ", false, false, G_SP2, G_SP);        /* equal ranks: leftmost first */
    EXPECT(t, "\xe2\x96\x81" "ab", false, false, G_SP_AB); /* a literal ▁ is a space */
    EXPECT(t, "\n\n", false, false, G_NL2);
    EXPECT(t, "\n\n\n", false, false, G_NL3);           /* whole newline word; the merges give \n\n \n */
    EXPECT(t, "\n\n\n\n", false, false, G_NL2, G_NL2);   /* not a token: merges */
    EXPECT(t, "a\nb", false, false, G_A, G_NL, G_B);    /* no merge across a newline */
    EXPECT(t, "ab\n\n\nab", false, false, G_AB, G_NL3, G_AB);
    EXPECT(t, "\xc3\xa4", false, false, G_XC3, G_XA4);  /* ä: byte fallback */
    EXPECT(t, "\xc3\xa4" "ab", false, false, G_XC3, G_XA4, G_AB);
    /* invalid UTF-8 is U+FFFD (EF BF BD): <0xEF> exists, <0xBF> does not (the raw
     * one-byte token "\xbf" is not a fallback here), <0xBD> neither: dropped */
    EXPECT(t, "\xff", false, false, G_XEF);
    int32_t ids[16];
    assert_int_equal(tokenizer_encode(t, "x", 1, false, false, ids, 16), 0);
    /* special tokens: control ones only when parsed, user-defined always, no space prefix after them */
    EXPECT(t, "<|turn>ab<turn|>", false, true, G_TURN, G_AB, G_TURN_END);
    EXPECT(t, "<|turn>ab<turn|>", false, false, G_AB);
    EXPECT(t, "a<|\"|>b", false, false, G_A, G_QUOTE, G_B);
    EXPECT(t, "<|turn> a", false, true, G_TURN, G_SP_A);
    EXPECT(t, "<bos>", false, true, G_BOS);
    /* BOS forced on although add_bos_token says false; EOS never appended */
    assert_true(tokenizer_add_bos(t));
    assert_int_equal(tokenizer_bos(t), G_BOS);
    EXPECT(t, "ab", true, false, G_BOS, G_AB);
    assert_true(tokenizer_is_eog(t, G_EOS));
    assert_true(tokenizer_is_eog(t, G_TURN_END)); /* <turn|> is in the reference's list */
    assert_false(tokenizer_is_eog(t, G_TURN));
    assert_int_equal(tokenizer_nl(t), G_NL);

    /* decoding: ▁ -> space, byte tokens -> their byte, no leading space removed */
    char buf[64];
    static const int32_t d1[] = {G_SP_AB, G_SP, G_B, G_XC3, G_XA4, G_XEF};
    assert_int_equal(tokenizer_decode(t, d1, 6, true, false, buf, sizeof buf), 8);
    assert_memory_equal(buf, " ab b\xc3\xa4\xef", 8);
    /* llama_detokenize: gemma4 keeps clean_spaces on (" ," and " 's" lose the space) */
    static const int32_t d2[] = {G_A, G_SP, G_COMMA, G_SP, G_APOS, G_S};
    assert_int_equal(tokenizer_detokenize(t, d2, 6, false, false, buf, sizeof buf), 4);
    assert_string_equal(buf, "a,'s");
    static const int32_t d3[] = {G_BOS, G_SP_AB};
    tokenizer_detokenize(t, d3, 2, true, false, buf, sizeof buf);
    assert_string_equal(buf, " ab");
    tokenizer_detokenize(t, d3, 2, false, true, buf, sizeof buf);
    assert_string_equal(buf, "<bos> ab");
    tokenizer_free(t);

    /* no default special ids for gemma4: without the keys there is no BOS to add */
    t = small_gemma4(false);
    assert_int_equal(tokenizer_bos(t), -1);
    assert_int_equal(tokenizer_eos(t), -1);
    assert_int_equal(tokenizer_unk(t), -1);
    assert_false(tokenizer_add_bos(t));
    EXPECT(t, "ab", true, false, G_AB);
    tokenizer_free(t);
}

/* Straightforward BPE written from the reference's rules, independent of
 * tokenizer_bpe.c (quadratic: rescans every pair after each merge). */
static int naive_gemma4(const tokenizer *t, const char *text, size_t len, bool newline_rule, int32_t *out,
                        int cap)
{
    char esc[1024], utf[2048];
    size_t el = 0, ul = 0;
    for (size_t i = 0; i < len && el + 3 < sizeof esc; i++) {
        if (text[i] == ' ') {
            memcpy(esc + el, "\xe2\x96\x81", 3);
            el += 3;
        } else
            esc[el++] = text[i];
    }
    for (size_t off = 0; off < el && ul + 4 < sizeof utf;) /* invalid UTF-8 -> U+FFFD */
        ul += (size_t)unicode_encode(unicode_decode(esc, el, &off), utf + ul);
    int n = 0;
    for (size_t w = 0; w < ul;) {
        bool nl = utf[w] == '\n';
        size_t we = w;
        while (we < ul && (utf[we] == '\n') == nl)
            we++;
        if (newline_rule && nl && tok_text_to_id(t, utf + w, we - w) >= 0) {
            out[n++] = tok_text_to_id(t, utf + w, we - w);
            w = we;
            continue;
        }
        size_t so[256], sl[256];
        int ns = 0;
        for (size_t o = w; o < we; ns++) {
            size_t l = unicode_len_utf8((uint8_t)utf[o]);
            so[ns] = o;
            sl[ns] = l < we - o ? l : we - o;
            o += sl[ns];
        }
        for (;;) {
            int best = -1;
            int32_t best_rank = INT32_MAX;
            for (int i = 0; i + 1 < ns; i++) {
                char key[512];
                memcpy(key, utf + so[i], sl[i]);
                key[sl[i]] = ' ';
                memcpy(key + sl[i] + 1, utf + so[i + 1], sl[i + 1]);
                int32_t r = tok_map_get(&t->merges, key, sl[i] + 1 + sl[i + 1]);
                if (r >= 0 && r < best_rank) {
                    best_rank = r;
                    best = i;
                }
            }
            if (best < 0)
                break;
            sl[best] += sl[best + 1];
            memmove(so + best + 1, so + best + 2, sizeof so[0] * (size_t)(ns - best - 2));
            memmove(sl + best + 1, sl + best + 2, sizeof sl[0] * (size_t)(ns - best - 2));
            ns--;
        }
        for (int i = 0; i < ns; i++) {
            int32_t id = tok_text_to_id(t, utf + so[i], sl[i]);
            if (id >= 0) {
                if (n < cap)
                    out[n++] = id;
                continue;
            }
            for (size_t j = 0; j < sl[i]; j++) {
                char hx[8];
                snprintf(hx, sizeof hx, "<0x%02X>", (uint8_t)utf[so[i] + j]);
                id = tokenizer_find(t, hx);
                if (id >= 0 && n < cap)
                    out[n++] = id;
            }
        }
        w = we;
    }
    return n;
}

static void expect_naive(const tokenizer *t, const char *s, size_t len)
{
    int32_t a[512], b[512];
    int32_t na = tokenizer_encode(t, s, len, false, false, a, 512);
    int nb = naive_gemma4(t, s, len, true, b, 512);
    if (na != nb || memcmp(a, b, sizeof a[0] * (size_t)na) != 0)
        fail_msg("gemma4 encoding of '%.*s' (%zu bytes): %d tokens, naive BPE %d", (int)len, s, len, na, nb);
}

static void test_gemma4_vocab(void **state)
{
    (void)state;
    tokenizer *t = load(GEMMA4);
    assert_int_equal(tokenizer_kind(t), TOKENIZER_BPE);
    assert_string_equal(tokenizer_pre(t), "gemma4");
    /* lines of llama.cpp's ggml-vocab-gemma-4.gguf.out */
    EXPECT(t, "   ", false, false, 139);
    EXPECT(t, "\t\n", false, false, 255968, 107);
    EXPECT(t, " Hello world", false, false, 26352, 1902);
    EXPECT(t, "    Hello\n    Hello", false, false, 140, 9259, 107, 140, 9259);
    EXPECT(t, " this is \xf0\x9f\xa6\x99.cpp", false, false, 672, 563, 236743, 478, 397, 404, 391, 236761,
           12362);
    assert_true(tokenizer_add_bos(t));
    assert_int_equal(tokenizer_bos(t), 2);
    EXPECT(t, "Hello", true, false, 2, 9259);

    /* byte fallback: the peacock (U+1F99A) and \r have no token, their bytes do */
    int32_t f0 = tokenizer_find(t, "<0xF0>"), x9f = tokenizer_find(t, "<0x9F>");
    int32_t xa6 = tokenizer_find(t, "<0xA6>"), x9a = tokenizer_find(t, "<0x9A>");
    int32_t cr = tokenizer_find(t, "<0x0D>");
    assert_true(f0 >= 0 && x9f >= 0 && xa6 >= 0 && x9a >= 0 && cr >= 0);
    assert_int_equal(tokenizer_find(t, "\xf0\x9f\xa6\x9a"), -1);
    assert_int_equal(tokenizer_find(t, "\r"), -1);
    assert_int_equal(tokenizer_token_type(t, f0), TOKEN_TYPE_BYTE);
    EXPECTV(t, "\xf0\x9f\xa6\x9a", false, false, f0, x9f, xa6, x9a);
    EXPECTV(t, "\r\n", false, false, cr, tokenizer_find(t, "\n")); /* the newline is its own word */
    char buf[512];
    assert_int_equal(tokenizer_token_to_piece(t, f0, false, buf, sizeof buf), 1);
    assert_int_equal((uint8_t)buf[0], 0xF0);
    /* invalid UTF-8 becomes U+FFFD, which is a token here */
    EXPECTV(t, "\xff", false, false, tokenizer_find(t, "\xef\xbf\xbd"));

    /* special tokens */
    int32_t turn = tokenizer_find(t, "<|turn>"), turn_end = tokenizer_find(t, "<turn|>");
    int32_t quote = tokenizer_find(t, "<|\"|>"), tool_resp = tokenizer_find(t, "<|tool_response>");
    assert_int_equal(turn, 105);
    assert_int_equal(turn_end, 106);
    int32_t a[64], b[64];
    int32_t nb = tokenizer_encode(t, "user\nHi", 7, false, false, b, 64);
    int32_t na = tokenizer_encode(t, "<|turn>user\nHi<turn|>", 21, false, true, a, 64);
    assert_int_equal(na, nb + 2);
    assert_int_equal(a[0], turn);
    assert_memory_equal(a + 1, b, sizeof b[0] * (size_t)nb);
    assert_int_equal(a[na - 1], turn_end);
    na = tokenizer_encode(t, "<|turn>user\nHi<turn|>", 21, false, false, a, 64);
    for (int32_t i = 0; i < na; i++)
        assert_true(a[i] != turn && a[i] != turn_end);
    EXPECTV(t, "<|\"|>", false, false, quote);     /* user-defined: matched even unparsed */
    EXPECTV(t, "<|tool_response>", false, true, tool_resp);
    na = tokenizer_encode(t, "<|tool_response>", 16, false, false, a, 64);
    assert_true(na > 1); /* user-defined, but made control as end-of-generation: parsed only on request */
    assert_true(tokenizer_is_eog(t, tool_resp));
    assert_true(tokenizer_is_eog(t, turn_end));
    assert_true(tokenizer_is_eog(t, tokenizer_eos(t)));

    /* whitespace runs and everything else against the naive BPE; a newline
     * run that is a token stays whole (here the merges agree with it: the
     * small vocab above is where the rule shows) */
    char s[256];
    for (int k = 1; k <= 40; k++) {
        memset(s, '\n', (size_t)k);
        expect_naive(t, s, (size_t)k);
        int32_t whole = tok_text_to_id(t, s, (size_t)k);
        if (whole >= 0) {
            assert_int_equal(tokenizer_encode(t, s, (size_t)k, false, false, a, 64), 1);
            assert_int_equal(a[0], whole);
        }
        memset(s, ' ', (size_t)k);
        expect_naive(t, s, (size_t)k);
        memset(s, '\t', (size_t)k);
        expect_naive(t, s, (size_t)k);
    }
    static const char *const alpha[] = {" ", "  ", "\n", "\n\n", "\t", "\r", "a", "Hello", "ab", "3", "!!",
                                        "\xc3\xa4", "\xe4\xbd\xa0", "\xf0\x9f\xa6\x9a", "\xf0\x9f\xa6\x99",
                                        "\xff", "\xe2\x96", "\xe2\x80\x83", "<", "|", ">", "'s", ".cpp",
                                        "\xc2\xa0"};
    uint64_t seed = 0x6e6d6d61; /* "gemma" */
    for (int r = 0; r < 3000; r++) {
        size_t len = 0;
        int n = 1 + r % 16;
        s[0] = 0;
        for (int j = 0; j < n; j++) {
            const char *p = alpha[test_xorshift64(&seed) % (sizeof alpha / sizeof alpha[0])];
            memcpy(s + len, p, strlen(p));
            len += strlen(p);
        }
        expect_naive(t, s, len);
        /* valid UTF-8 without ▁ round-trips through decode */
        if (!memchr(s, '\xff', len) && !memmem(s, len, "\xe2\x96", 2)) {
            na = tokenizer_encode(t, s, len, false, false, a, 64);
            assert_true(na >= 0 && na <= 64);
            int32_t d = tokenizer_decode(t, a, na, true, false, buf, sizeof buf);
            if ((size_t)d != len || memcmp(buf, s, len) != 0)
                fail_msg("gemma4 round-trip of '%.*s' failed", (int)len, s);
        }
    }
    /* a literal ▁ is a space to the tokenizer, and comes back as one */
    EXPECT(t, "\xe2\x96\x81Hello", false, false, 26352);

    /* llama_detokenize cleans " ," and " 's" for gemma4 (clean_spaces stays on) */
    const char *txt = "Hello , world 's ok ?";
    na = tokenizer_encode(t, txt, strlen(txt), true, false, a, 64);
    assert_int_equal(a[0], 2);
    tokenizer_detokenize(t, a, na, true, false, buf, sizeof buf);
    assert_string_equal(buf, "Hello, world's ok?");
    assert_int_equal(tokenizer_decode(t, a + 1, na - 1, true, false, buf, sizeof buf), (int32_t)strlen(txt));
    assert_string_equal(buf, txt);
    tokenizer_free(t);
}

/* tokenizer_count: the full encode's count up to its limit, and an early
 * stop past it (BPE after the word that passed; SPM after the fragment,
 * between special tokens, that passed: an SPM fragment merges whole). */
static void test_count_bounded(void **state)
{
    (void)state;
    static const char *const vocabs[] = {GPT2, SMOL, SPM};
    const char *unit = "Hello world, how are you? 3.14159 caf\xc3\xa9 </s>  \n\tthe cat sat on the mat. ";
    const size_t ul = strlen(unit), reps = 4000;
    char *big = malloc(ul * reps + 1);
    assert_non_null(big);
    for (size_t i = 0; i < reps; i++)
        memcpy(big + i * ul, unit, ul);
    big[ul * reps] = 0;
    for (size_t v = 0; v < sizeof vocabs / sizeof *vocabs; v++) {
        tokenizer *t = load(vocabs[v]);
        const bool spm = tokenizer_kind(t) == TOKENIZER_SPM;
        for (int bos = 0; bos < 2; bos++) {
            for (size_t len = 0; len <= ul * 3; len += 7) { /* every prefix: same count as the full encode */
                const int32_t full = tokenizer_encode(t, big, len, bos, true, NULL, 0);
                assert_true(full >= 0);
                assert_int_equal(tokenizer_count(t, big, len, bos, true, 0), full);
                assert_int_equal(tokenizer_count(t, big, len, bos, true, full), full);
                assert_int_equal(tokenizer_count(t, big, len, bos, true, full + 3), full);
                if (full > 1) {
                    const int32_t k = tokenizer_count(t, big, len, bos, true, full - 1);
                    assert_true(k > full - 1 && k <= full);
                }
            }
            /* the whole text: past a limit of 50, counting stops within a word (BPE) or a fragment (SPM:
             * "</s>" splits the text) */
            const int32_t full = tokenizer_encode(t, big, ul * reps, bos, true, NULL, 0);
            const int32_t k = tokenizer_count(t, big, ul * reps, bos, true, 50);
            assert_true(full > 10000);
            assert_true(k > 50);
            assert_true(k <= 50 + (spm ? 40 : 8));
        }
        /* SPM without special tokens: one fragment, counted in full (exact: merges cross words) */
        if (spm) {
            const int32_t full = tokenizer_encode(t, big, ul * reps, false, false, NULL, 0);
            assert_int_equal(tokenizer_count(t, big, ul * reps, false, false, 50), full);
        }
        tokenizer_free(t);
    }
    free(big);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden_ids),     cmocka_unit_test(test_spm_byte_fallback),
        cmocka_unit_test(test_invalid_utf8),   cmocka_unit_test(test_special_parsing),
        cmocka_unit_test(test_bos_rules),      cmocka_unit_test(test_encode_buffer),
        cmocka_unit_test(test_utf8_split_decode), cmocka_unit_test(test_eog),
        cmocka_unit_test(test_bad_vocab),
        cmocka_unit_test(test_detokenize_llama),
        cmocka_unit_test(test_unicode_table),
        cmocka_unit_test(test_pretokenizer_presets),
        cmocka_unit_test(test_pretokenizer_custom_vs_regex),
        cmocka_unit_test(test_gemma4_small_rules),
        cmocka_unit_test(test_gemma4_vocab),
        cmocka_unit_test(test_count_bounded),
    };
    return cmocka_run_group_tests_name("tokenizer", tests, NULL, NULL);
}
