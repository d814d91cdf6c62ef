/* Fuzz target: the tokenizers on random bytes, over every vocabulary type in
 * the test data: SPM (llama-spm, phi-3, stories260K) and byte-level BPE with
 * each pre-tokenizer there (gpt-2, starcoder, deepseek-llm, deepseek-coder,
 * falcon, refact, mpt, smollm, llama-bpe, qwen2). Byte 0 of the input picks
 * the vocabulary, byte 1 the flags (add BOS, parse special tokens), the rest
 * is the text. Checks: ids are in the vocabulary, the count is the same with
 * a buffer too small, every id has a piece, and byte-level BPE gives back the
 * exact text (its pieces are the input's bytes) when its vocabulary has all
 * 256 bytes, no special token is parsed and the text is valid UTF-8 without
 * U+FFFD. */
#include <stdbool.h>
#include <string.h>

#include "fuzz.h"
#include "gguf/gguf.h"
#include "tokenizer/tokenizer.h"

static const char *const vocab_files[] = {
    "golden/tokenizer/ggml-vocab-llama-spm.gguf",
    "golden/tokenizer/ggml-vocab-phi-3.gguf",
    "models/stories260K.gguf",
    "golden/tokenizer/ggml-vocab-gpt-2.gguf",
    "golden/tokenizer/ggml-vocab-starcoder.gguf",
    "golden/tokenizer/ggml-vocab-deepseek-llm.gguf",
    "golden/tokenizer/ggml-vocab-deepseek-coder.gguf",
    "golden/tokenizer/ggml-vocab-falcon.gguf",
    "golden/tokenizer/ggml-vocab-refact.gguf",
    "golden/tokenizer/ggml-vocab-mpt.gguf",
    "models/smollm-mini-q8_0.gguf",
    "models/llama3-mini-q8_0.gguf",
    "models/qwen3-mini-q8_0.gguf",
};
#define N_VOCABS (sizeof vocab_files / sizeof vocab_files[0])
static tokenizer *vocabs[N_VOCABS];
static bool lossless[N_VOCABS]; /* BPE with a token for every byte */
static size_t n_vocabs;

/* GPT-2's bytes_to_unicode: byte b stands for this code point in a byte-level
 * vocabulary. A vocabulary without all 256 drops the bytes it lacks, as
 * llama.cpp does (falcon's has no control characters). */
static bool has_every_byte(const tokenizer *t)
{
    uint32_t n = 0;
    for (uint32_t b = 0; b < 256; b++) {
        uint32_t cp = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174 ? b : 256 + n++;
        char s[4] = {0};
        if (cp < 0x80)
            s[0] = (char)cp;
        else {
            s[0] = (char)(0xc0 | cp >> 6);
            s[1] = (char)(0x80 | (cp & 0x3f));
        }
        if (tokenizer_find(t, s) < 0)
            return false;
    }
    return true;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *root = getenv("TOKSCOPE_TESTDATA");
    if (!root || !*root)
        root = "../shared";
    for (size_t i = 0; i < N_VOCABS; i++) {
        char path[1024], err[512];
        snprintf(path, sizeof path, "%s/%s", root, vocab_files[i]);
        gguf_ctx *g = gguf_open(path, err, sizeof err);
        tokenizer *t = g ? tokenizer_build(g, err, sizeof err) : NULL;
        if (g)
            gguf_close(g);
        if (!t) {
            fprintf(stderr, "fuzz_tokenizer: %s (set TOKSCOPE_TESTDATA)\n", err);
            exit(2);
        }
        lossless[n_vocabs] = tokenizer_kind(t) == TOKENIZER_BPE && has_every_byte(t);
        vocabs[n_vocabs++] = t;
    }
    return 0;
}

/* Valid UTF-8 (no overlong forms, surrogates or values past U+10FFFF) and
 * free of U+FFFD, which BPE also produces for invalid input. */
static bool clean_utf8(const uint8_t *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        uint8_t c = s[i];
        size_t l = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (!l || i + l > n)
            return false;
        uint32_t cp = l == 1 ? c : c & (0x7f >> l);
        for (size_t k = 1; k < l; k++) {
            if ((s[i + k] & 0xc0) != 0x80)
                return false;
            cp = cp << 6 | (s[i + k] & 0x3f);
        }
        static const uint32_t min[5] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < min[l] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) || cp == 0xfffd || cp == 0)
            return false;
        i += l;
    }
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2 || n_vocabs == 0)
        return 0;
    const size_t vi = data[0] % n_vocabs;
    const tokenizer *t = vocabs[vi];
    const bool add_bos = data[1] & 1, special = data[1] & 2;
    const char *text = (const char *)data + 2;
    const size_t len = size - 2;
    const int32_t V = tokenizer_n_vocab(t);

    int32_t small[4];
    int32_t n = tokenizer_encode(t, text, len, add_bos, special, small, 4);
    FUZZ_CHECK(n >= 0, "encode failed");
    int32_t *ids = malloc(((size_t)n + 1) * sizeof *ids);
    FUZZ_CHECK(ids, "out of memory");
    int32_t n2 = tokenizer_encode(t, text, len, add_bos, special, ids, n + 1);
    FUZZ_CHECK(n2 == n, "count %d with a small buffer, %d with room", n, n2);
    FUZZ_CHECK(!memcmp(small, ids, (size_t)(n < 4 ? n : 4) * sizeof *ids), "a small buffer got other ids");
    for (int32_t i = 0; i < n; i++) {
        FUZZ_CHECK(ids[i] >= 0 && ids[i] < V, "id %d outside the vocabulary of %d", ids[i], V);
        char piece[8];
        int32_t k = tokenizer_token_to_piece(t, ids[i], true, piece, sizeof piece);
        FUZZ_CHECK(k >= 0, "no piece for id %d", ids[i]);
    }
    size_t cap = len * 4 + 64;
    char *out = malloc(cap);
    FUZZ_CHECK(out, "out of memory");
    int32_t m = tokenizer_decode(t, ids, n, false, false, out, (int32_t)cap);
    FUZZ_CHECK(m >= 0 && (size_t)m < cap, "decode returned %d", m);
    if (lossless[vi] && !special && !add_bos && clean_utf8((const uint8_t *)text, len))
        FUZZ_CHECK((size_t)m == len && !memcmp(out, text, len), "BPE round trip: %zu bytes in, %d out", len,
                   m);
    tokenizer_detokenize(t, ids, n, true, true, out, (int32_t)cap);
    tokenizer_detokenize(t, ids, n, false, false, out, 3); /* a short buffer */
    /* pieces of arbitrary ids, the specials included */
    for (size_t i = 2; i + 1 < size && i < 34; i += 2) {
        int32_t id = (int32_t)((data[i] | data[i + 1] << 8) % (uint32_t)V);
        char piece[16];
        tokenizer_token_to_piece(t, id, (data[i] & 1) != 0, piece, sizeof piece);
    }
    free(out);
    free(ids);
    return 0;
}
